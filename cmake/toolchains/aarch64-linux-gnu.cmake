# Cross-compiling trnmx for 64-bit Arm Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu) and arm64 libraries installed as multiarch packages
# (dpkg --add-architecture arm64; libhwy-dev:arm64 ...), which live in
# /usr/lib/aarch64-linux-gnu. tools/run.sh arm uses it:
#
#   cmake -S . -B build/arm -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# CMAKE_CROSSCOMPILING_EMULATOR runs the test programs (gtest_discover_tests
# lists their tests with it, ctest runs them with it): qemu-aarch64 from
# Debian's qemu-user, whose CPU model (-cpu) comes from the QEMU_CPU
# environment variable, e.g. QEMU_CPU=max,sve256=on.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: find_package and find_library search lib/aarch64-linux-gnu of
# each prefix (and not the host's lib/x86_64-linux-gnu).
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
find_program(TRNMX_QEMU_AARCH64 qemu-aarch64)
if(TRNMX_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${TRNMX_QEMU_AARCH64}")
endif()
# pkg-config (FindOpenSSL and others) reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
