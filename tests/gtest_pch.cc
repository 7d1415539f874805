// The translation unit that builds the test suites' precompiled header
// (trnmx_use_gtest_pch in tests/CMakeLists.txt); CMake includes the header,
// and GoogleTest's gtest_main links it into an empty test program.
