# FindPthreadpool: pthreadpool (Debian: libpthreadpool-dev), which ships
# neither a CMake package nor a pkg-config file.
#
# Defines Pthreadpool_FOUND and the imported target Pthreadpool::pthreadpool.
find_path(Pthreadpool_INCLUDE_DIR NAMES pthreadpool.h)
find_library(Pthreadpool_LIBRARY NAMES pthreadpool)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Pthreadpool
  REQUIRED_VARS Pthreadpool_LIBRARY Pthreadpool_INCLUDE_DIR)
if(Pthreadpool_FOUND AND NOT TARGET Pthreadpool::pthreadpool)
  add_library(Pthreadpool::pthreadpool UNKNOWN IMPORTED)
  set_target_properties(Pthreadpool::pthreadpool PROPERTIES
    IMPORTED_LOCATION "${Pthreadpool_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Pthreadpool_INCLUDE_DIR}")
endif()
mark_as_advanced(Pthreadpool_INCLUDE_DIR Pthreadpool_LIBRARY)
