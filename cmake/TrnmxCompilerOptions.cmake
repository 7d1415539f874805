# Compiler options shared by every trnmx target.
#
# -ffp-contract=off: the bit-exactness contract of every kernel names each
# fused multiply-add explicitly; the compiler must not fuse a*b+c on its own.
#
# Highway target policy (architecture.md section 4), set here once for the
# library, tests and benchmarks alike: no -march, so every attainable x86
# target is compiled and dispatched at run time (EMU128, SSSE3, SSE4, AVX2,
# AVX3), plus AVX3_DL, which Highway 1.0.3 compiles only on request
# (HWY_WANT_AVX3_DL). On 64-bit Arm, every target Highway 1.0.3 compiles
# with GCC 12: NEON, SVE, SVE2, SVE_256 and SVE2_128 (SVE's vectors are
# sizeless types, never array elements or members in trnmx's kernels:
# src/internal/vec_array-inl.h; docs/testing.md, "Arm"). The tests read the
# same target list (hwy::SupportedAndGeneratedTargets) and so run on each of
# these targets.
#
# TRNMX_HWY_DISABLED_TARGETS leaves targets out of a build (Highway's
# HWY_DISABLED_TARGETS, e.g. "HWY_SSSE3|HWY_SSE4"); EMU128, the fallback, is
# compiled whenever it is attainable (no -march above it). Two builds of CI
# use it, because compiling every target is most of their time:
# tools/run.sh sanitize leaves AVX3 out and, with -march=haswell -maes where
# the CPU has them, compiles AVX2 alone (AVX2 becomes the static target;
# else AVX2 and EMU128): the other targets are the same Highway code at
# other widths, and the Release test build runs them all on every CPU that
# has them. The consumer tests that
# compile the library again from source (add_subdirectory, conan) compile
# EMU128 alone. Release builds compile them all.
set(TRNMX_HWY_DISABLED_TARGETS "" CACHE STRING
  "Highway targets not to compile (HWY_DISABLED_TARGETS expression); empty: all")
function(trnmx_set_compile_options target)
  target_compile_definitions(${target} PRIVATE HWY_WANT_AVX3_DL)
  if(TRNMX_HWY_DISABLED_TARGETS)
    target_compile_definitions(${target} PRIVATE
      "HWY_DISABLED_TARGETS=(${TRNMX_HWY_DISABLED_TARGETS})")
  endif()
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-ffp-contract=off -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<AND:$<BOOL:${TRNMX_WERROR}>,$<CXX_COMPILER_ID:GNU,Clang>>:-Werror>)
  if(TRNMX_SANITIZE)
    # -Wno-maybe-uninitialized: with the sanitizers at -O1, GCC 12 reports
    # false positives inside libstdc++ (std::function in <regex>, cli_test.cc);
    # GCC's manual warns that -fsanitize makes this warning unreliable. The
    # Release build keeps it.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-sanitize-recover=all
                           -fno-omit-frame-pointer $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# trnmx_sanitizer_quick_compile(target): under TRNMX_SANITIZE, compiles the
# target at -O0. For code that is cheap to run and costly to optimise with
# the sanitizers' instrumentation: the GoogleTest suites and the command-line
# front ends (CLI11). Most of the sanitizer build's time was theirs at -O1;
# the library they test keeps the build's -O1.
function(trnmx_sanitizer_quick_compile target)
  if(TRNMX_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# trnmx_sanitizer_pointer_checks_off(target): under TRNMX_SANITIZE, UBSan
# keeps its arithmetic and type checks (signed overflow, shifts, bounds,
# division, float-to-integer, bool and enum loads, vptr) and drops
# alignment, null, object-size and pointer-overflow. For code without SIMD
# loads or type punning (the emulator): AddressSanitizer already reports the
# null or out-of-bounds access those four lead to, and at -O1 they doubled
# its compile time (lower/collective.cc: 47 -> 24 s of CPU).
function(trnmx_sanitizer_pointer_checks_off target)
  if(TRNMX_SANITIZE)
    target_compile_options(${target} PRIVATE
      -fno-sanitize=alignment,null,object-size,pointer-overflow)
  endif()
endfunction()

# trnmx_sanitizer_scope_checks_off(target): under TRNMX_SANITIZE,
# AddressSanitizer leaves out its use-after-scope checks (it still checks
# heap, stack and global buffers). For the library's SIMD kernels: Highway's
# inlined code has thousands of vector temporaries, each of whose scopes the
# check poisons and unpoisons, which more than doubled their compile time at
# -O1 (src/formats/mx_line.cc: 118 s of CPU with it, 50 s without). The
# kernels' locals are vectors, counters and indices rather than objects whose
# addresses are handed out; the emulator, the command-line tools and the
# tests, where lifetimes are subtler (string_view, spans of temporaries),
# keep the check.
function(trnmx_sanitizer_scope_checks_off target)
  if(TRNMX_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize-address-use-after-scope)
  endif()
endfunction()

# Only when top-level: a parent project's build type is its own business.
if(PROJECT_IS_TOP_LEVEL AND NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
