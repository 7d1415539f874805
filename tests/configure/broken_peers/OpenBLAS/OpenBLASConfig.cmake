# An OpenBLAS package that points at a library that does not exist.
set(OpenBLAS_INCLUDE_DIRS "${CMAKE_CURRENT_LIST_DIR}")
set(OpenBLAS_LIBRARIES "${CMAKE_CURRENT_LIST_DIR}/libno-such-openblas.so")
