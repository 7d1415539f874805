// The translation unit that builds the test suites' precompiled header
// (trnmx_use_gtest_pch in tests/CMakeLists.txt); CMake includes the header.
