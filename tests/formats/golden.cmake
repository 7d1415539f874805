# Golden tests against ml_dtypes / numpy data (tools/golden/gen_ml_dtypes.py,
# tests/data/ml_dtypes_*; see tools/golden/README.md). Included from
# tests/formats/CMakeLists.txt.
#   golden_boundary_test  boundary table, milliseconds       labels golden;unit
#   golden_digest_test    SHA-256 over 2^32 inputs per        labels exhaustive;golden
#                         (format, policy), ~10-30 s each; one gtest per job so
#                         `ctest -j` runs them in parallel. Needs OpenSSL
#                         (libssl-dev); without it, reported and not built.
find_package(OpenSSL QUIET)

get_filename_component(_trnmx_golden_data "${CMAKE_CURRENT_LIST_DIR}/../data" ABSOLUTE)

trnmx_add_gtest(golden_boundary_test
  SOURCES "${CMAKE_CURRENT_LIST_DIR}/golden_test.cc"
  LABELS golden unit
  TIMEOUT 120)
target_compile_definitions(golden_boundary_test PRIVATE
  TRNMX_GOLDEN_BOUNDARY
  TRNMX_TEST_DATA_DIR="${_trnmx_golden_data}")

if(OpenSSL_FOUND)
  trnmx_add_gtest(golden_digest_test
    SOURCES "${CMAKE_CURRENT_LIST_DIR}/golden_test.cc"
    LABELS exhaustive golden
    LIBS OpenSSL::Crypto
    TIMEOUT 1200)
  target_compile_definitions(golden_digest_test PRIVATE
    TRNMX_GOLDEN_DIGEST
    TRNMX_TEST_DATA_DIR="${_trnmx_golden_data}")
else()
  message(STATUS "trnmx: OpenSSL not found, skipped: golden_digest_test; install libssl-dev to enable")
endif()

unset(_trnmx_golden_data)
