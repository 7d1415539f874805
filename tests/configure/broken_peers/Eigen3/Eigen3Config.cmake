# An Eigen package that configures but is broken: its include directory does
# not exist, so nothing including <Eigen/Core> compiles.
if(NOT TARGET Eigen3::Eigen)
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_LIST_DIR}/no-such-include")
endif()
