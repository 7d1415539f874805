# Consumer tests (ctest label `consumer`), included by tests/CMakeLists.txt.
#
#   consumer.install       installs the already-built trnmx into a prefix under
#                          the build tree (a test, so it runs after the build)
#   consumer.find_package  builds and runs tests/consumer with
#                          find_package(trnmx 0.1 CONFIG REQUIRED)
#   consumer.add_subdirectory  builds and runs tests/consumer with the source
#                          tree embedded by add_subdirectory() (no install)
#   consumer.pkg_config    builds and runs the same main.cc with
#                          `pkg-config --cflags --libs trnmx`
#
# When xsimd 8 is found (TRNMX_TESTS_HAVE_XSIMD), find_package, add_subdirectory
# and pkg_config also build and run consumer_inline (inline_main.cc: the
# optional xsimd inline layer, with xsimd found by the consumer itself), and
# install checks that the inline headers are installed and that trnmx's CMake
# package and .pc file do not depend on xsimd. When the emulator is built,
# install also runs the installed trnmx-emu on the installed trn3.json and
# find_package builds and runs consumer_emu (emu_main.cc, trnmx::emu).
#   consumer.conan         `conan create conan/` offline with the Debian 12
#                          profile (label `consumer;package`; skipped when
#                          conan is not installed)
#
# Run them with: ctest --test-dir BUILD -L consumer --output-on-failure
if(NOT TRNMX_INSTALL)
  message(STATUS "trnmx: consumer tests need TRNMX_INSTALL=ON; not registered")
  return()
endif()

set(_trnmx_consumer_src "${CMAKE_CURRENT_LIST_DIR}")
set(_trnmx_consumer_driver "${_trnmx_consumer_src}/run_consumer_test.sh")
set(_trnmx_consumer_work "${PROJECT_BINARY_DIR}/consumer")
set(_trnmx_consumer_prefix "${_trnmx_consumer_work}/prefix")
# A sanitized libtrnmx.a needs the sanitizer runtime in the consumer's link.
set(_trnmx_consumer_flags "")
# With the emulator built, install also checks trnmx-emu and the machine
# files, and find_package builds consumer_emu (emu_main.cc) on trnmx::emu.
set(_trnmx_consumer_emu OFF)
if(TARGET trnmx_emu)
  set(_trnmx_consumer_emu ON)
endif()
if(TRNMX_SANITIZE)
  set(_trnmx_consumer_flags "-fsanitize=address,undefined")
endif()
# add_subdirectory and conan compile the library from source again. They test
# how it is built and consumed, not its kernels (the test build itself runs
# every Highway target, optimised), so they build the Debug configuration
# (-O0, the quickest to compile) and the Highway code for EMU128 only, the
# portable fallback that is always built: minutes less CI (docs/testing.md),
# and it shows the library whole on that target alone. Debug's flags are -O0
# without -g: debug information was a third of those compiles. Both are unity builds
# (CMAKE_UNITY_BUILD), as tools/run.sh's are: that also shows the sources
# build that way.
set(_trnmx_consumer_hwy_disabled "HWY_SSSE3|HWY_SSE4|HWY_AVX2|HWY_AVX3|HWY_AVX3_DL")
set(_trnmx_consumer_rebuild_config Debug)
set(_trnmx_consumer_rebuild_debug_flags "-O0")

add_test(NAME consumer.install
  COMMAND "${_trnmx_consumer_driver}" install
          "${PROJECT_BINARY_DIR}" "${_trnmx_consumer_prefix}" "$<CONFIG>")
set_tests_properties(consumer.install PROPERTIES
  FIXTURES_SETUP trnmx_consumer_prefix)

add_test(NAME consumer.find_package
  COMMAND "${_trnmx_consumer_driver}" find_package
          "${_trnmx_consumer_src}" "${_trnmx_consumer_work}/find_package"
          "${_trnmx_consumer_prefix}" "${PROJECT_VERSION}" "${CMAKE_GENERATOR}"
          "${CMAKE_CXX_COMPILER}" "$<CONFIG>" "${_trnmx_consumer_flags}")

add_test(NAME consumer.add_subdirectory
  COMMAND "${_trnmx_consumer_driver}" add_subdirectory
          "${_trnmx_consumer_src}" "${_trnmx_consumer_work}/add_subdirectory"
          "${PROJECT_SOURCE_DIR}" "${PROJECT_VERSION}" "${CMAKE_GENERATOR}"
          "${CMAKE_CXX_COMPILER}" "${_trnmx_consumer_rebuild_config}" "${_trnmx_consumer_flags}"
          "${_trnmx_consumer_hwy_disabled}" "${_trnmx_consumer_rebuild_debug_flags}")

add_test(NAME consumer.pkg_config
  COMMAND "${_trnmx_consumer_driver}" pkg_config
          "${_trnmx_consumer_src}" "${_trnmx_consumer_work}/pkg_config"
          "${_trnmx_consumer_prefix}" "${CMAKE_INSTALL_LIBDIR}" "${PROJECT_VERSION}"
          "${CMAKE_CXX_COMPILER}" "${_trnmx_consumer_flags}")

set_tests_properties(consumer.install consumer.find_package consumer.add_subdirectory
                     consumer.pkg_config PROPERTIES
  LABELS consumer
  TIMEOUT 900  # add_subdirectory compiles the library from scratch
  SKIP_RETURN_CODE 77
  ENVIRONMENT "CMAKE_COMMAND=${CMAKE_COMMAND};TRNMX_CONSUMER_INLINE=${TRNMX_TESTS_HAVE_XSIMD};TRNMX_CONSUMER_EMU=${_trnmx_consumer_emu}")
set_tests_properties(consumer.find_package consumer.pkg_config PROPERTIES
  FIXTURES_REQUIRED trnmx_consumer_prefix)

# conan create: builds the package from the sources in this checkout in
# Conan's cache (~/.conan2), then builds and runs conan/test_package. Offline:
# -nr, and CLI11 comes from Debian through [platform_requires].
if(EXISTS "${PROJECT_SOURCE_DIR}/conan/conanfile.py")
  find_program(TRNMX_CONAN_EXECUTABLE conan DOC "Conan 2 client for the consumer.conan test")
  set(_trnmx_conan "${TRNMX_CONAN_EXECUTABLE}")
  if(NOT _trnmx_conan)
    set(_trnmx_conan conan)  # Looked up again when the test runs; skipped if absent.
  endif()
  # Without the `trnmx` program (option tools): consumer.install already runs
  # the installed one, and leaving it out saves compiling its CLI11-heavy
  # sources a third time in CI. The library, the emulator, trnmx-emu and
  # test_package's emulator call are built and run as a user gets them, for
  # the Highway targets above only: passed as a CMake variable through
  # Conan's toolchain, and made part of the package id so that this cut-down
  # build can never be taken from the cache for a full one.
  add_test(NAME consumer.conan
    COMMAND "${_trnmx_consumer_driver}" conan "${_trnmx_conan}"
            "${PROJECT_SOURCE_DIR}/conan" "${PROJECT_SOURCE_DIR}/conan/profiles/debian12"
            -o "trnmx/*:tools=False" -s "build_type=${_trnmx_consumer_rebuild_config}"
            -c "tools.cmake.cmaketoolchain:extra_variables={'TRNMX_HWY_DISABLED_TARGETS': '${_trnmx_consumer_hwy_disabled}', 'CMAKE_CXX_FLAGS_DEBUG': '${_trnmx_consumer_rebuild_debug_flags}', 'CMAKE_UNITY_BUILD': 'ON'}"
            -c "tools.info.package_id:confs=['tools.cmake.cmaketoolchain:extra_variables']")
  set_tests_properties(consumer.conan PROPERTIES
    LABELS "consumer;package"
    TIMEOUT 1800
    COST 600  # Builds the library from source (minutes): start it first under ctest -j.
    SKIP_RETURN_CODE 77
    RESOURCE_LOCK conan_cache)
endif()
