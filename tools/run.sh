#!/usr/bin/env bash
# trnmx's one entry point for people and CI. Each mode installs what it needs
# (Debian packages, PyPI packages) only if missing, configures, builds, runs.
#
#   tools/run.sh demo                 main job: gpt-oss-120b served on one Trn3 Gen2
#                                     UltraServer (trnmx-emu serve: summary, HTML report,
#                                     trace), then in short the MX quantization errors, a
#                                     checked MXFP4 GEMM (trnmx demo) and the same kind of
#                                     GEMM on the Trainium3 emulator (trnmx-emu gemm --check)
#   tools/run.sh test [ctest args]    build what the tests need (not the benchmarks), run every test
#   tools/run.sh sanitize             unit tests under ASan + UBSan
#   tools/run.sh tsan [ctest args]    every test that runs threads (label threads) under
#                                     ThreadSanitizer
#   tools/run.sh fuzz [seconds] [harness...]
#                                     libFuzzer on every parser of outside data (Clang,
#                                     ASan + UBSan), seconds per harness (default 300)
#   tools/run.sh bench [bench args]   build and run the benchmarks
#   tools/run.sh compare [--quick] [--json FILE]
#                                     trnmx side by side with its peers (GEMM vs OpenBLAS and
#                                     oneDNN, MX quantize vs copy and numpy/ml_dtypes, MX GEMV
#                                     vs read bandwidth): one table of ratios with the CPU
#                                     (docs/performance.md); --quick: a few rows, for a smoke check
#   tools/run.sh arm [--quick]        cross-build for aarch64 (Debian's g++-aarch64-linux-gnu,
#                                     arm64 multiarch libraries), run the unit tests under
#                                     qemu-aarch64 with SVE at 256 and 512 bits on every
#                                     Highway target (NEON, SVE, SVE2, SVE_256, SCALAR; the
#                                     digests also at 128 bits, for SVE2_128), compare the bit
#                                     digests with x86-64's; --quick: bit_digest_test, NEON and SVE
#
# Build trees: build/demo, build/test, build/asan, build/tsan, build/fuzz, build/bench,
# build/arm, build/arm-quick (arm64 pthreadpool unpacked in build/arm-deps);
# compare writes its benchmark outputs into build/bench/compare.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)

log() { printf '[run.sh] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_need PKG...: installs the Debian packages that are not installed yet.
apt_need() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# need_conan: puts a conan 2 on PATH. One already on PATH is used as it is;
# otherwise it is installed from PyPI into a project-local virtual
# environment (build/venv), which works whether python3 is Debian's
# (externally managed, so no system-wide pip) or another interpreter.
need_conan() {
  command -v conan >/dev/null 2>&1 && return 0
  local venv="$root/build/venv"
  if [ ! -x "$venv/bin/conan" ]; then
    log "installing conan from PyPI into $venv"
    python3 -m venv "$venv" 2>/dev/null || { apt_need python3-venv; rm -rf "$venv"; python3 -m venv "$venv"; }
    "$venv/bin/python" -m pip install -q conan
  fi
  export PATH="$venv/bin:$PATH"
}

# need_golden_python: sets TRNMX_PYTHON to an interpreter with numpy,
# ml_dtypes (the independent MX quantizer of tools/golden/) and gguf
# (llama.cpp's gguf-py, the GGML MXFP4 peer). The python3 on PATH is used when
# it has all three; otherwise they are installed from PyPI into
# build/venv-golden (an existing one only gets what it lacks).
need_golden_python() {
  local golden_imports='import numpy, ml_dtypes, gguf.quants'
  if python3 -c "$golden_imports" >/dev/null 2>&1; then
    TRNMX_PYTHON=$(command -v python3)
  else
    local venv="$root/build/venv-golden"
    if ! "$venv/bin/python" -c "$golden_imports" >/dev/null 2>&1; then
      log "installing numpy, ml_dtypes and gguf from PyPI into $venv"
      if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
        rm -rf "$venv"
        python3 -m venv "$venv" 2>/dev/null || { apt_need python3-venv; rm -rf "$venv"; python3 -m venv "$venv"; }
      fi
      "$venv/bin/python" -m pip install -q numpy ml_dtypes==0.6.0 gguf==0.19.0
    fi
    TRNMX_PYTHON="$venv/bin/python"
  fi
}

base_packages=(g++ cmake ninja-build pkgconf libcli11-dev libhwy-dev libpthreadpool-dev zlib1g-dev)
test_packages=(libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libmpfr-dev libgmp-dev
               libeigen3-dev libssl-dev libxsimd-dev)

# sanitizer_isa: the -march flags and disabled Highway targets of the
# sanitized builds (sanitize, tsan, fuzz), in isa_cxx_flags and isa_hwy_disabled.
sanitizer_isa() {
  isa_cxx_flags=""
  isa_hwy_disabled='HWY_SSSE3|HWY_SSE4|HWY_AVX3|HWY_AVX3_DL'
  if [ "$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | grep -ow -E 'avx2|bmi1|bmi2|fma|f16c|movbe|aes|pclmulqdq|abm' | sort -u | wc -l)" -eq 9 ]; then
    isa_cxx_flags='-march=haswell -maes'
    isa_hwy_disabled='HWY_AVX3|HWY_AVX3_DL'
  fi
}

# The builds here are unity builds (CMake's CMAKE_UNITY_BUILD): up to eight
# sources of a target compiled as one, so the headers they share (GoogleTest,
# nlohmann/json, the emulator's) are parsed and their inline code compiled
# once per batch instead of once per file. Highway's per-target sources and
# the ISA kernels stay alone (CMakeLists.txt). A developer's own build tree
# without it compiles every source alone, which is what keeps each source's
# includes honest.
unity=(-DCMAKE_UNITY_BUILD=ON)

configure() {  # configure DIR CMAKE_ARGS...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
}

# timed STEP CMD...: runs CMD and notes its wall time; the notes are printed
# when run.sh exits, also after a failure.
step_times=()
timed() {
  local step=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  step_times+=("$(printf '%-10s %5d s' "$step" $((SECONDS - t0)))")
  return "$rc"
}
print_step_times() {
  [ ${#step_times[@]} -gt 0 ] || return 0
  log "wall time per step:"
  for t in "${step_times[@]}"; do log "  $t"; done
}
trap print_step_times EXIT

# configure_bench: the benchmark build (build/bench) with its peers.
# Debian 12's dnnl-config.cmake needs OpenCL (find_package(OpenCL REQUIRED)),
# which libdnnl-dev only recommends. Without it the configure still works
# and only gemm_compare is skipped (cmake/TrnmxPeers.cmake).
configure_bench() {
  apt_need "${base_packages[@]}" libbenchmark-dev nlohmann-json3-dev libopenblas-dev libdnnl-dev \
    ocl-icd-opencl-dev
  configure build/bench -DCMAKE_BUILD_TYPE=Release -DTRNMX_BUILD_TESTS=OFF -DTRNMX_BUILD_BENCHMARKS=ON \
    -DTRNMX_INSTALL=OFF
}

# compare_python: an interpreter with numpy and ml_dtypes for the numpy peer
# (TRNMX_PYTHON if set, python3, the golden tests' build/venv-golden), or
# nothing: the comparison then says "peer not installed" instead of
# installing packages.
compare_python() {
  local p
  for p in "${TRNMX_PYTHON:-}" python3 "$root/build/venv-golden/bin/python"; do
    [ -n "$p" ] && "$p" -c 'import numpy, ml_dtypes' >/dev/null 2>&1 && { echo "$p"; return 0; }
  done
  return 0
}

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in
  demo)
    apt_need "${base_packages[@]}" nlohmann-json3-dev
    configure build/demo -DCMAKE_BUILD_TYPE=Release -DTRNMX_BUILD_TESTS=OFF \
      -DTRNMX_BUILD_BENCHMARKS=OFF -DTRNMX_BUILD_EMULATOR=ON -DTRNMX_INSTALL=OFF
    # The two programs only: trnmx (core library) and trnmx-emu (emulator).
    cmake --build build/demo -j "$jobs" --target trnmx_cli trnmx_emu_cli
    emu=build/demo/emulator/tools/trnmx-emu
    # The main job, on the built-in gpt-oss-120b config and trn3-ultraserver-gen2
    # preset: all 144 chips at LNC 2 as 36 replicas of TP 16, 64 sequences per
    # replica, 1792-token prompts and 512 generated tokens, so the mean decode
    # step is at a 2048-token context (the layout, batch and context of the
    # issue's 144-chip bar).
    printf '== gpt-oss-120b (MXFP4 experts, BF16 attention) served on one trn3-ultraserver-gen2\n'
    printf '   (trnmx-emu serve, analytical mode: TP 16 x DP 36, batch 64 per replica,\n'
    printf '   prompt 1792, output 512, decode at mean context 2048)\n\n'
    "$emu" serve --system trn3-ultraserver-gen2 --model gpt-oss-120b --tp 16 --dp 36 \
      --weights attn=bf16,experts=mxfp4 --batch 64 --input 1792 --output 512 \
      --html "$root/build/demo/serve-report.html" --trace "$root/build/demo/serve-trace.json"
    printf '   open the report in any browser (offline); the trace in chrome://tracing or Perfetto\n'
    printf '\n== MX quantization errors and a checked MXFP4 GEMM (trnmx demo)\n\n'
    build/demo/tools/trnmx/trnmx demo "$@" | grep -v '^(--elements'
    printf '== The same kind of GEMM (MXFP4) lowered onto 4 NeuronCores of trn3, simulated, then\n'
    printf '   replayed tile by tile with the trnmx kernels and compared with trnmx::Gemm (--check)\n\n'
    "$emu" gemm --machine trn3 --m 1024 --n 1024 --k 2048 --dtype mxfp4 --cores 4 --check |
      grep -E '^(gemm|time|throughput|limiting|check) '
    ;;
  test)
    apt_need "${base_packages[@]}" "${test_packages[@]}"
    need_conan
    command -v conan >/dev/null || { log "conan could not be installed"; exit 1; }
    need_golden_python
    timed configure configure build/test "${unity[@]}" -DCMAKE_BUILD_TYPE=Release -DTRNMX_WERROR=ON \
      -DTRNMX_BUILD_BENCHMARKS=OFF -DTRNMX_GOLDEN_PYTHON="$TRNMX_PYTHON" \
      -DCMAKE_POSITION_INDEPENDENT_CODE=ON  # PIC objects: abi.exports links them into a .so
    timed build cmake --build build/test -j "$jobs"
    log "running all tests (labels: unit golden cli consumer emulator exhaustive)"
    # ctest ends with its time per label (sec*proc: the sum of the tests' wall times).
    timed ctest ctest --test-dir build/test -j "$jobs" --output-on-failure "$@"
    ;;
  sanitize)
    apt_need "${base_packages[@]}" "${test_packages[@]}"
    # -O1 -g1 (line tables only): what AddressSanitizer's documentation
    # suggests for usable reports, and much quicker to compile than -O2 -g.
    # On a CPU with Haswell's instructions and AES, -march=haswell -maes makes
    # AVX2 Highway's static target, so only AVX2 is compiled (AVX3 left out):
    # Highway 1.0.3's SSE4 baseline needs __AES__, which GCC's haswell lacks,
    # and without -maes the static target was SSSE3 and SSSE3, SSE4 and AVX2
    # were all compiled. Elsewhere: AVX2 and EMU128. The Release test build
    # runs every target (cmake/TrnmxCompilerOptions.cmake).
    sanitizer_isa
    timed configure configure build/asan "${unity[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS="$isa_cxx_flags" -DTRNMX_HWY_DISABLED_TARGETS="$isa_hwy_disabled" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DTRNMX_SANITIZE=ON -DTRNMX_WERROR=ON \
      -DTRNMX_BUILD_BENCHMARKS=OFF -DTRNMX_INSTALL=OFF
    # Only what the three labels run (trnmx_label_targets in tests/CMakeLists.txt).
    timed build cmake --build build/asan -j "$jobs" \
      --target trnmx_tests_unit trnmx_tests_cli trnmx_tests_emulator
    log "running unit, cli and emulator tests under AddressSanitizer + UndefinedBehaviorSanitizer"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      timed ctest ctest --test-dir build/asan -j "$jobs" --output-on-failure -L "unit|cli|emulator" "$@"
    ;;
  tsan)
    # ThreadSanitizer (GCC 12's, runtime libtsan2) on the tests of label
    # threads: every suite that runs trnmx code on several threads (executor,
    # bulk codecs, MX tensors, GEMM, MoE, attention). Release (-O3, what
    # users run) with -g1 (line tables: the reports' stacks name file and
    # line); Highway's targets as in the sanitizer build (sanitizer_isa).
    # Nothing is suppressed: pthreadpool's own synchronisation (futexes and
    # atomics in uninstrumented code) is described to TSan by src/executor.cc.
    apt_need "${base_packages[@]}" "${test_packages[@]}" libtsan2
    sanitizer_isa
    timed configure configure build/tsan "${unity[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS="$isa_cxx_flags -fsanitize=thread -g1" \
      -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
      -DTRNMX_HWY_DISABLED_TARGETS="$isa_hwy_disabled" -DTRNMX_WERROR=ON \
      -DTRNMX_BUILD_BENCHMARKS=OFF -DTRNMX_BUILD_EXAMPLES=OFF -DTRNMX_INSTALL=OFF
    timed build cmake --build build/tsan -j "$jobs" --target trnmx_tests_threads
    log "running the tests of label threads under ThreadSanitizer"
    # -E: the suites of those executables that run on one thread only
    # (nullptr executors), and would take ~80 s under TSan for nothing.
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      timed ctest ctest --test-dir build/tsan -j "$jobs" --output-on-failure -L threads \
        -E '^(AttentionAccuracy|FixedMath)\.' "$@"
    ;;
  fuzz)
    # libFuzzer (clang-14, libclang-rt-14-dev) with ASan + UBSan on each
    # harness of tests/fuzz/fuzz_support.h, starting from its checked-in
    # corpus; what it finds new stays in build/fuzz/corpus/<harness>/ and
    # crashes in build/fuzz/findings/ (copy those into tests/fuzz/corpus/ to
    # keep them as regression tests).
    seconds=${1:-300}
    [ $# -gt 0 ] && shift
    apt_need "${base_packages[@]}" "${test_packages[@]}" clang-14 libclang-rt-14-dev
    sanitizer_isa
    CXX=clang++-14 timed configure configure build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS="$isa_cxx_flags -fsanitize=fuzzer-no-link" \
      -DTRNMX_HWY_DISABLED_TARGETS="$isa_hwy_disabled" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DTRNMX_SANITIZE=ON -DTRNMX_BUILD_FUZZERS=ON -DTRNMX_BUILD_BENCHMARKS=OFF \
      -DTRNMX_BUILD_EXAMPLES=OFF -DTRNMX_INSTALL=OFF
    harnesses=("$@")
    if [ ${#harnesses[@]} -eq 0 ]; then
      mapfile -t harnesses < <(sed -n 's/^ *X([A-Za-z0-9]*, "\([a-z0-9_]*\)").*/\1/p' tests/fuzz/fuzz_support.h)
    fi
    timed build cmake --build build/fuzz -j "$jobs" --target "${harnesses[@]/#/fuzz_}"
    mkdir -p build/fuzz/findings build/fuzz/logs
    for h in "${harnesses[@]}"; do
      mkdir -p "build/fuzz/corpus/$h"
      log "fuzzing $h for $seconds s (log: build/fuzz/logs/$h.log)"
      # -max_len: the machine, system and model files of the seed corpora are up to 10 KB.
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        timed "$h" "build/fuzz/tests/fuzz/fuzz_$h" -max_total_time="$seconds" -max_len=16384 \
          -print_final_stats=1 -artifact_prefix="build/fuzz/findings/$h-" \
          "build/fuzz/corpus/$h" "tests/fuzz/corpus/$h" > "build/fuzz/logs/$h.log" 2>&1 || true
      grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|SUMMARY|.*fuzz invariant)' \
        "build/fuzz/logs/$h.log" || true
    done
    if [ -n "$(ls -A build/fuzz/findings)" ]; then
      log "findings (each input reproduces with build/fuzz/tests/fuzz/fuzz_<harness> FILE):"
      ls -l build/fuzz/findings >&2
      exit 1
    fi
    log "no findings"
    ;;
  bench)
    configure_bench
    cmake --build build/bench -j "$jobs"
    for b in build/bench/bench/*_bench; do
      log "running $b"
      "$b" "$@"
    done
    ;;
  compare)
    # Each binary runs once with exactly the rows of issue 14's table
    # (docs/performance.md), medians of >= 5 repetitions of repeated calls on
    # the same data (warm caches where the data fits, streamed where it does
    # not); one-thread rows are timed on the thread's CPU clock, which a
    # shared machine disturbs much less than wall time. OpenBLAS's variables
    # are unset for these commands only (their best kernels, as for every
    # peer; shared/reference/machine.md). gemm_compare runs twice: its
    # thread counts apply to every shape, and only 2048^3 has a 2-thread row.
    quick=0 json=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --quick) quick=1 ;;
        --json) json=${2:?--json needs a file}; shift ;;
        --json=*) json=${1#--json=} ;;
        *) log "unknown argument $1 (usage: tools/run.sh compare [--quick] [--json FILE])"; exit 2 ;;
      esac
      shift
    done
    configure_bench
    timed build nice -n 10 cmake --build build/bench -j "$jobs" --target gemm_compare gemm_mx_bench bulk_bench
    [ -x build/bench/bench/gemm_compare ] ||
      { log "gemm_compare was not built (OpenBLAS or oneDNN missing: see the configure output)"; exit 1; }
    out=build/bench/compare
    rm -rf "$out" && mkdir -p "$out"
    reps=(--benchmark_repetitions=5 --benchmark_out_format=json)
    gemm_args=(--shapes=square,llm --clock=cpu --min_reps=5)
    if [ "$quick" -eq 1 ]; then
      gemm_1t=sq1024,m1_k4096_n4096
      mx_filter='^BM_(ReadBandwidth|GemvDenseFp32xMxfp4/threads:1)/'
      bulk_filter='^BM_(Copy_Stream|Copy_Memcpy|Dram_Mxfp8E4M3|Dram_Mxfp4|Dram_Bf16)/'
      # A smoke check: 3 repetitions, short minimum times.
      reps=(--benchmark_repetitions=3 --benchmark_min_time=0.1 --benchmark_out_format=json)
      gemm_args+=(--min_time=0)
      np_args=(--repeats 5)
    else
      gemm_1t=sq1024,sq2048,sq4096,m1_k4096_n4096,m8_k4096_n4096,m128_k4096_n4096
      mx_filter='^BM_(GemmMxfp8/M:512/N:4096/K:4096/threads:1|GemmBf16Exact/M:512/N:4096/K:4096/threads:1|GemmMxfp8ViaBf16/M:512/N:4096/K:4096/mode:[0-9]|GemmBf16Mode/M:512/N:4096/K:4096/mode:[0-9]|ReadBandwidth|Gemv(Mxfp4|Mxfp8xMxfp4|DenseBf16xMxfp4|DenseFp32xMxfp4)/threads:[12])/'
      bulk_filter='^BM_(Copy_Stream|Copy_Memcpy|Dram_[A-Za-z0-9_]*)/'
      np_args=(--repeats 11)
    fi
    # TRNMX_OPENBLAS_CORETYPE: a core for OpenBLAS where it does not
    # recognise the CPU (Cooperlake on the Sapphire Rapids-class VMs, where
    # 0.3.21 falls back to Prescott; docs/gemm.md).
    unblas=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE
            ${TRNMX_OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$TRNMX_OPENBLAS_CORETYPE})
    log "GEMM: trnmx, OpenBLAS, oneDNN, 1 thread ($gemm_1t)"
    timed gemm_1t "${unblas[@]}" build/bench/bench/gemm_compare "${gemm_args[@]}" --filter="$gemm_1t" \
      --threads=1 --json="$out/gemm_1t.json" > "$out/gemm_1t.txt"
    if [ "$quick" -eq 0 ]; then
      log "GEMM: 2048^3 FP32, 2 threads"
      timed gemm_2t "${unblas[@]}" build/bench/bench/gemm_compare "${gemm_args[@]}" --filter=sq2048 \
        --threads=2 --dtypes=fp32 --json="$out/gemm_2t.json" > "$out/gemm_2t.txt"
    fi
    log "MX GEMM and GEMV, read bandwidth (gemm_mx_bench)"
    timed gemm_mx build/bench/bench/gemm_mx_bench --benchmark_filter="$mx_filter" "${reps[@]}" \
      --benchmark_out="$out/gemm_mx.json" > "$out/gemm_mx.txt"
    log "MX quantize and casts, copies (bulk_bench)"
    timed bulk build/bench/bench/bulk_bench --benchmark_filter="$bulk_filter" "${reps[@]}" \
      --benchmark_out="$out/bulk.json" > "$out/bulk.txt" 2>&1
    py=$(compare_python)
    if [ -n "$py" ]; then
      log "numpy + ml_dtypes casts ($py)"
      timed numpy "${unblas[@]}" "$py" bench/numpy_ml_dtypes_bench.py "${np_args[@]}" --clock cpu \
        --json "$out/numpy.json" > "$out/numpy.txt"
    else
      log "numpy + ml_dtypes not found (python3, build/venv-golden): that peer is left out"
    fi
    python3 tools/compare.py --dir "$out" ${json:+--json "$json"}
    ;;
  arm)
    # aarch64 cross build, tests under qemu-user (docs/testing.md, "Arm").
    # Highway compiles NEON, SVE, SVE2, SVE_256 and SVE2_128 there; the full
    # run adds Highway's SCALAR fallback (HWY_COMPILE_ALL_ATTAINABLE). The
    # tests run on QEMU's "max" CPU with SVE vectors of 256 bits (targets
    # SVE_256, SVE2, SVE, NEON, SCALAR) and of 512 bits (SVE2, SVE, NEON,
    # SCALAR); the digests also at 128 bits, where SVE2_128 runs. The
    # per-target tests are listed when ctest runs, as the CPU decides which
    # exist (tests/CMakeLists.txt): forget_test_lists drops the lists made
    # for the previous CPU (gtest_discover_tests names them
    # <program>[N]_tests.cmake); a stale list would run, say, SVE_256's
    # tests on a CPU without it, where their filter selects nothing.
    forget_test_lists() { find "$1" -name '*\[*\]_tests.cmake' -delete; }
    quick=0
    if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      log "adding the arm64 architecture to dpkg (multiarch)"
      as_root dpkg --add-architecture arm64
      as_root apt-get update -qq
    fi
    arm_packages=(g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64 libgtest-dev:arm64)
    # The full run's suites also need MPFR (kernels_gemm_mx_test) and xsimd (inline layer).
    [ "$quick" -eq 1 ] || arm_packages+=(libmpfr-dev:arm64 libgmp-dev:arm64 libxsimd-dev:arm64)
    timed packages apt_need "${base_packages[@]}" "${arm_packages[@]}"
    # Debian 12's libpthreadpool-dev is not multiarch (installing the arm64
    # package would remove the amd64 one), so its two arm64 packages are
    # unpacked into build/arm-deps instead; the test programs find the
    # library there through their build-tree RPATH.
    deps="$root/build/arm-deps"
    if [ ! -e "$deps/usr/lib/aarch64-linux-gnu/libpthreadpool.so" ]; then
      log "unpacking the arm64 pthreadpool packages into $deps"
      mkdir -p "$deps/debs"
      (cd "$deps/debs" && { apt-get download -q libpthreadpool0:arm64 libpthreadpool-dev:arm64 ||
        { as_root apt-get update -qq && apt-get download -q libpthreadpool0:arm64 libpthreadpool-dev:arm64; }; })
      for deb in "$deps"/debs/*.deb; do dpkg-deb -x "$deb" "$deps"; done
    fi
    dir=build/arm
    flags=-DHWY_COMPILE_ALL_ATTAINABLE
    disabled=""
    targets=(trnmx_tests_unit)
    if [ "$quick" -eq 1 ]; then
      # NEON and SVE, the scalable target: the one code path of the SVE
      # family whose vector length is known at run time only (SVE2 is the
      # same code with SVE2 instructions inside some of Highway's ops;
      # SVE_256 and SVE2_128 fix the length at compile time). Building NEON
      # and SVE took 105 s of CPU (53 s of wall on two cores) against 94 s
      # for NEON alone; each further SVE target would add about as much.
      dir=build/arm-quick
      flags=""
      disabled="HWY_SVE2|HWY_SVE_256|HWY_SVE2_128"
      targets=(bit_digest_test)
    fi
    timed configure configure "$dir" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
      -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_BUILD_TYPE=Release -DTRNMX_WERROR=ON \
      -DCMAKE_CXX_FLAGS="$flags" -DTRNMX_HWY_DISABLED_TARGETS="$disabled" -DTRNMX_BUILD_TOOLS=OFF \
      -DTRNMX_BUILD_EMULATOR=OFF -DTRNMX_BUILD_EXAMPLES=OFF -DTRNMX_BUILD_BENCHMARKS=OFF \
      -DTRNMX_INSTALL=OFF
    timed build cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
    if [ "$quick" -eq 1 ]; then
      log "bit digests on aarch64 (qemu max, SVE 256 bits: targets SVE, NEON) against x86-64's"
      forget_test_lists "$dir"
      QEMU_CPU=max,sve256=on timed digests ctest --test-dir "$dir" -j "$jobs" --output-on-failure \
        -R '^BitDigest\.' "$@"
    else
      # Left out: configure.broken_peers (it configures the project for the
      # build machine with this build's compiler: CMake, not bits); unless
      # the kernel runs aarch64 programs itself (binfmt_misc, Debian's
      # qemu-user-binfmt), the tests that exec an aarch64 program from
      # inside the test (a "threadsafe" death test re-executes its binary;
      # the -fno-exceptions consumer), which qemu-user cannot; at 512 bits,
      # the FixedMath accuracy sweeps, scalar code against long double
      # (IEEE quad in software on aarch64, 2-3 minutes each under qemu),
      # already run at 256.
      exclude='^configure\.'
      [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
        exclude+='|^NullExecutor\.RunsOnTheCallingThreadAndStartsNoThread$|^StatusOrWithoutExceptions\.'\
'|^ThreadPoolExecutor\.NestedCallsRunEveryTaskInsteadOfWaiting$'
      failed=0
      for vl in 256 512; do
        [ "$vl" = 512 ] && exclude+='|^FixedMath\.[A-Za-z]*WithinBound$'
        log "unit tests on aarch64 (qemu max, SVE $vl bits)"
        forget_test_lists "$dir"
        QEMU_CPU=max,sve$vl=on timed "sve$vl" ctest --test-dir "$dir" -j "$jobs" --output-on-failure \
          -L unit -E "$exclude" "$@" || failed=1
      done
      # Highway picks SVE2_128 only where vectors are 128 bits.
      log "bit digests on aarch64 (qemu max, SVE 128 bits: SVE2_128 too)"
      forget_test_lists "$dir"
      QEMU_CPU=max,sve128=on timed sve128 ctest --test-dir "$dir" -j "$jobs" --output-on-failure \
        -R '^BitDigest\.' "$@" || failed=1
      exit "$failed"
    fi
    ;;
  *)
    sed -n '2,/^# Build trees/p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
