#!/usr/bin/env bash
# Driver of the `consumer` ctest tests (registered by consumer_tests.cmake).
# Each mode prints what it runs and fails with a message naming the step.
#
#   run_consumer_test.sh install      BUILD_DIR PREFIX CONFIG
#   run_consumer_test.sh find_package CONSUMER_SRC WORK_DIR PREFIX VERSION GENERATOR CXX CONFIG [CXXFLAGS]
#   run_consumer_test.sh add_subdirectory CONSUMER_SRC WORK_DIR TRNMX_SOURCE_DIR VERSION GENERATOR CXX CONFIG [CXXFLAGS [HWY_DISABLED_TARGETS [DEBUG_FLAGS]]]
#   run_consumer_test.sh pkg_config   CONSUMER_SRC WORK_DIR PREFIX LIBDIR VERSION CXX [CXXFLAGS]
#   run_consumer_test.sh conan        CONAN RECIPE_DIR PROFILE [CONAN_CREATE_ARGS...]
#
# Exit status 77 means "skipped" (a tool is missing); ctest reports it as such.
# TRNMX_CONSUMER_INLINE=ON (set by ctest when xsimd 8 is found) also builds and
# runs consumer_inline, the consumer of the optional xsimd inline layer.
# TRNMX_CONSUMER_EMU=ON (set by ctest when the emulator is built) checks the
# installed emulator (trnmx-emu, machine files) and builds and runs
# consumer_emu against trnmx::emu.
set -euo pipefail
cmake=${CMAKE_COMMAND:-cmake}  # the CMake that built trnmx (set by ctest)
inline=${TRNMX_CONSUMER_INLINE:-OFF}
emu=${TRNMX_CONSUMER_EMU:-OFF}

step() { printf '\n=== %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }
die() { printf 'consumer test FAILED: %s\n' "$*" >&2; exit 1; }

mode=${1:?mode}
shift

case "$mode" in
  install)
    build_dir=$1 prefix=$2 config=${3:-}
    step "install the built trnmx from $build_dir into $prefix"
    rm -rf "$prefix"
    args=("$cmake" --install "$build_dir" --prefix "$prefix")
    [[ -n "$config" ]] && args+=(--config "$config")
    run "${args[@]}" || die "cmake --install failed (is the tree fully built? run 'cmake --build $build_dir' first)"
    for f in include/trnmx/formats.h include/trnmx/version.h include/trnmx/inline/all.h \
             include/trnmx/inline/codec.h include/trnmx/inline/mx_block.h; do
      [[ -f "$prefix/$f" ]] || die "$prefix/$f was not installed"
    done
    config_file=$(find "$prefix" -name trnmxConfig.cmake -print -quit)
    [[ -n "$config_file" ]] || die "no trnmxConfig.cmake under $prefix"
    pc_file=$(find "$prefix" -name trnmx.pc -print -quit)
    [[ -n "$pc_file" ]] || die "no trnmx.pc under $prefix"
    # Only users of trnmx/inline/ need xsimd: the package must not require it.
    if grep -il xsimd "$(dirname "$config_file")"/*.cmake "$pc_file"; then
      die "trnmx's CMake package or .pc file mentions xsimd (listed above); only trnmx/inline/ users need it"
    fi
    [[ -f "$prefix/share/doc/trnmx/LICENSE" ]] || die "$prefix/share/doc/trnmx/LICENSE was not installed"
    grep -q "Apache License" "$prefix/share/doc/trnmx/LICENSE" || die "the installed LICENSE is not Apache-2.0"
    if [[ -x "$prefix/bin/trnmx" ]]; then
      step "run the installed tool"
      run "$prefix/bin/trnmx" formats >/dev/null || die "$prefix/bin/trnmx formats failed"
    fi
    if [[ "$emu" == ON ]]; then
      for f in include/trnmx/emu/gemm.h include/trnmx/emu/machine.h include/trnmx/emu/system.h \
               bin/trnmx-emu share/trnmx/machines/trn2.json share/trnmx/machines/trn3.json \
               share/trnmx/machines/trn2-server.json share/trnmx/machines/trn2-ultraserver.json \
               share/trnmx/machines/trn3-ultraserver-gen1.json \
               share/trnmx/machines/trn3-ultraserver-gen2.json; do
        [[ -e "$prefix/$f" ]] || die "$prefix/$f was not installed (emulator)"
      done
      grep -q "trnmx::emu" "$(dirname "$config_file")"/trnmxTargets.cmake \
        || die "trnmx's CMake package does not export trnmx::emu"
      step "run the installed emulator on the installed trn3 machine file"
      run "$prefix/bin/trnmx-emu" gemm --machine "$prefix/share/trnmx/machines/trn3.json" \
        --m 256 --n 256 --k 512 --dtype mxfp4 --check \
        || die "$prefix/bin/trnmx-emu gemm --machine .../trn3.json --check failed"
      step "run the installed emulator on the installed Trn3 Gen2 UltraServer file"
      run "$prefix/bin/trnmx-emu" peak --system "$prefix/share/trnmx/machines/trn3-ultraserver-gen2.json" \
        || die "$prefix/bin/trnmx-emu peak --system .../trn3-ultraserver-gen2.json failed"
    fi
    step "installed files"
    (cd "$prefix" && find . -type f | sort)
    ;;

  find_package)
    src=$1 work=$2 prefix=$3 version=$4 generator=$5 cxx=$6 config=$7 cxxflags=${8:-}
    [[ -d "$prefix" ]] || die "$prefix does not exist: the consumer.install test must run first"
    rm -rf "$work"
    step "configure the consumer against $prefix with find_package(trnmx)"
    run "$cmake" -S "$src" -B "$work" -G "$generator" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE="$config" \
      -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$cxxflags" \
      -DCMAKE_PREFIX_PATH="$prefix" -DTRNMX_EXPECTED_PREFIX="$prefix" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DTRNMX_CONSUMER_INLINE="$inline" \
      -DTRNMX_CONSUMER_EMU="$emu" \
      || die "configuring the consumer with find_package(trnmx 0.1 CONFIG REQUIRED) failed"
    step "build the consumer"
    run "$cmake" --build "$work" --config "$config" || die "building the consumer failed"
    step "run the consumer"
    exe="$work/consumer"
    [[ -x "$exe" ]] || exe="$work/$config/consumer"
    run "$exe" "$version" || die "the consumer built with find_package reported a mismatch"
    if [[ "$inline" == ON ]]; then
      step "run the inline-layer consumer"
      run "$(dirname "$exe")/consumer_inline" || die "consumer_inline built with find_package reported a mismatch"
    fi
    if [[ "$emu" == ON ]]; then
      step "run the emulator consumer"
      run "$(dirname "$exe")/consumer_emu" || die "consumer_emu built with find_package(trnmx COMPONENTS emu) failed"
    fi
    ;;

  add_subdirectory)
    src=$1 work=$2 trnmx_src=$3 version=$4 generator=$5 cxx=$6 config=$7 cxxflags=${8:-}
    hwy_disabled=${9:-} debug_flags=${10:--g}
    rm -rf "$work"
    step "configure the consumer with add_subdirectory($trnmx_src)"
    run "$cmake" -S "$src" -B "$work" -G "$generator" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE="$config" \
      -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$cxxflags" \
      -DCMAKE_CXX_FLAGS_DEBUG="$debug_flags" -DTRNMX_HWY_DISABLED_TARGETS="$hwy_disabled" \
      -DTRNMX_SOURCE_DIR="$trnmx_src" -DTRNMX_CONSUMER_INLINE="$inline" -DCMAKE_UNITY_BUILD=ON \
      || die "configuring the consumer with add_subdirectory(trnmx) failed"
    step "build the consumer (and the embedded trnmx library)"
    run "$cmake" --build "$work" --config "$config" || die "building the consumer failed"
    step "run the consumer"
    exe="$work/consumer"
    [[ -x "$exe" ]] || exe="$work/$config/consumer"
    run "$exe" "$version" || die "the consumer built with add_subdirectory reported a mismatch"
    if [[ "$inline" == ON ]]; then
      step "run the inline-layer consumer"
      run "$(dirname "$exe")/consumer_inline" || die "consumer_inline built with add_subdirectory reported a mismatch"
    fi
    ;;

  pkg_config)
    src=$1 work=$2 prefix=$3 libdir=$4 version=$5 cxx=$6 cxxflags=${7:-}
    command -v pkg-config >/dev/null || { echo "pkg-config not found: skipped"; exit 77; }
    [[ -d "$prefix" ]] || die "$prefix does not exist: the consumer.install test must run first"
    rm -rf "$work" && mkdir -p "$work"
    export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
    step "pkg-config with PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
    got_version=$(pkg-config --modversion trnmx) || die "pkg-config cannot find trnmx in $PKG_CONFIG_PATH"
    [[ "$got_version" == "$version" ]] || die "pkg-config --modversion trnmx is '$got_version', expected '$version'"
    flags=$(pkg-config --cflags --libs trnmx)
    echo "pkg-config --cflags --libs trnmx: $flags"
    includedir=$(pkg-config --variable=includedir trnmx)
    [[ -f "$includedir/trnmx/formats.h" ]] || die "pkg-config includedir '$includedir' has no trnmx/formats.h (is the .pc file relocatable?)"
    step "build the consumer with pkg-config"
    # shellcheck disable=SC2086  # word splitting of the flags is intended
    run "$cxx" $cxxflags -o "$work/consumer" "$src/main.cc" $flags || die "compiling main.cc with pkg-config flags failed"
    step "run the consumer"
    LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run "$work/consumer" "$version" \
      || die "the consumer built with pkg-config reported a mismatch"
    if [[ "$inline" == ON ]]; then
      step "build and run the inline-layer consumer with pkg-config trnmx xsimd"
      inline_flags=$(pkg-config --cflags --libs trnmx xsimd) || die "pkg-config cannot find xsimd"
      # shellcheck disable=SC2086
      run "$cxx" $cxxflags -o "$work/consumer_inline" "$src/inline_main.cc" $inline_flags \
        || die "compiling inline_main.cc with pkg-config flags failed"
      LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run "$work/consumer_inline" \
        || die "consumer_inline built with pkg-config reported a mismatch"
    fi
    ;;

  conan)
    conan=$1 recipe=$2 profile=$3
    shift 3
    if ! command -v "$conan" >/dev/null; then
      echo "conan not found ('$conan'): skipped (python3 -m pip install conan)"
      exit 77
    fi
    run "$conan" --version
    step "conan create (offline: -nr, dependencies from [platform_requires] in $profile)"
    start=$(date +%s)
    # --build="trnmx/*": the package is built from this checkout every time; a
    # binary of the same recipe revision and package id left in the cache by
    # an earlier run would otherwise stand in for it.
    run "$conan" create "$recipe" -pr:a "$profile" --build=missing --build="trnmx/*" -nr "$@" \
      || die "conan create $recipe failed"
    echo "conan create took $(( $(date +%s) - start )) s"
    ;;

  *)
    die "unknown mode '$mode'"
    ;;
esac
