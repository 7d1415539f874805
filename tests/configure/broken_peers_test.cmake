# ctest `configure.broken_peers` (tests/configure/CMakeLists.txt): configures
# trnmx, tests and benchmarks on, in a scratch directory with every optional
# peer broken on purpose (broken_peers/), and checks that the configure
# succeeds, names each peer as skipped, and leaves out what needs it.
#
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DCXX=... -P broken_peers_test.cmake
foreach(var SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "broken_peers_test.cmake: -D${var}=... is required")
  endif()
endforeach()
set(broken "${CMAKE_CURRENT_LIST_DIR}/broken_peers")

file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G "${GENERATOR}"
          "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=Release
          -DTRNMX_BUILD_TESTS=ON -DTRNMX_BUILD_BENCHMARKS=ON
          "-Ddnnl_DIR=${broken}/dnnl"
          "-DEigen3_DIR=${broken}/Eigen3"
          "-DOpenBLAS_DIR=${broken}/OpenBLAS"
          "-DMPFR_INCLUDE_DIR=${broken}/mpfr_include"
          "-DTRNMX_GOLDEN_PYTHON=${broken}/python"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with broken peers failed (exit ${rc}); output above")
endif()

# Each broken peer is reported, with the cause its probe saw.
set(expected
  "trnmx: dnnl not usable, skipped: gemm_compare[^\n]*NoSuchPackage"
  "trnmx: OpenBLAS not usable, skipped: gemm_compare"
  "trnmx: Eigen3 not usable, skipped: formats_peer_test"
  "trnmx: MPFR not usable, skipped: formats_mpfr_test and kernels_gemm_mx_test[^\n]*broken mpfr.h"
  "cannot import numpy and ml_dtypes[^\n]*ml_dtypes[^\n]*skipped: golden.mx_quantize_vs_ml_dtypes")
foreach(pattern IN LISTS expected)
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "configure output lacks a line matching '${pattern}'")
  endif()
endforeach()

# What needs a broken peer is neither built nor registered; the rest is.
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}" --target help
  RESULT_VARIABLE rc OUTPUT_VARIABLE targets ERROR_VARIABLE targets)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "listing the build targets failed:\n${targets}")
endif()
foreach(target gemm_compare formats_peer_test formats_mpfr_test kernels_gemm_mx_test)
  if(targets MATCHES "(^|[\n /])${target}[:\n]")
    message(FATAL_ERROR "target ${target} exists although its peer is broken")
  endif()
endforeach()
foreach(target trnmx formats_unit_test gemm_mx_bench)
  if(NOT targets MATCHES "(^|[\n /])${target}[:\n]")
    message(FATAL_ERROR "target ${target} is missing:\n${targets}")
  endif()
endforeach()
file(READ "${WORK_DIR}/tests/tools/CTestTestfile.cmake" tools_tests)
if(tools_tests MATCHES "golden.mx_quantize_vs_ml_dtypes")
  message(FATAL_ERROR "golden.mx_quantize_vs_ml_dtypes is registered with a Python that lacks ml_dtypes")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message("configure with broken dnnl, OpenBLAS, Eigen3, MPFR and Python peers: OK")
