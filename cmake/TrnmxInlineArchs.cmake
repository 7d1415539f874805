# The xsimd architectures of the header-only inline layer (include/trnmx/inline/)
# that this machine runs, widest first, and how to compile for each. x86: read
# from the build machine's /proc/cpuinfo (avx512 needs x86-64-v4, avx2
# x86-64-v3; sse2 is always there); 64-bit Arm: NEON, which every aarch64 CPU
# has, and which needs no -march.
#
#   trnmx_inline_archs(<list-var>)   e.g. "avx512;avx2;sse2", "avx2;sse2", "neon64"
#   TRNMX_INLINE_FLAGS_<arch>        compile options that select the arch
#   TRNMX_INLINE_XSIMD_<arch>        its xsimd::default_arch::name()
#
#   trnmx_find_inline_xsimd(<found-var> <include-var>)
#                                    xsimd 8.x, the version trnmx/inline/ is
#                                    written against, and its include directory
#
# Used by tests/inline (a unit-test program per arch, the exhaustive sweep on
# the widest) and bench/inline_bench (the widest).
set(TRNMX_INLINE_FLAGS_avx512 -march=x86-64-v4)
set(TRNMX_INLINE_FLAGS_avx2 -march=x86-64-v3)
set(TRNMX_INLINE_FLAGS_sse2 -march=x86-64)
set(TRNMX_INLINE_FLAGS_neon64 "")
set(TRNMX_INLINE_XSIMD_avx512 avx512bw)
set(TRNMX_INLINE_XSIMD_avx2 fma3+avx2)
set(TRNMX_INLINE_XSIMD_sse2 sse2)
set(TRNMX_INLINE_XSIMD_neon64 arm64+neon)

function(trnmx_inline_archs out)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    set(${out} neon64 PARENT_SCOPE)
    return()
  endif()
  set(cpu_flags "")
  if(EXISTS /proc/cpuinfo)
    file(STRINGS /proc/cpuinfo cpu_flags REGEX "^flags" LIMIT_COUNT 1)
  endif()
  set(archs "")
  foreach(arch_and_flags IN ITEMS
      "avx512:avx512f avx512bw avx512cd avx512dq avx512vl avx2 fma bmi2"
      "avx2:avx2 fma bmi1 bmi2 f16c movbe")
    string(REPLACE ":" ";" parts "${arch_and_flags}")
    list(GET parts 0 arch)
    list(GET parts 1 needed)
    string(REPLACE " " ";" needed "${needed}")
    set(ok ON)
    foreach(flag IN LISTS needed)
      if(NOT cpu_flags MATCHES "[ \t]${flag}([ \t]|$)")
        set(ok OFF)
      endif()
    endforeach()
    if(ok)
      list(APPEND archs ${arch})
    endif()
  endforeach()
  list(APPEND archs sse2)
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

# Only xsimd's include directory is handed out: Debian 12's `xsimd` target
# also links "xtl", which Debian 12 does not package (-lxtl: not found; see
# docs/inline.md).
function(trnmx_find_inline_xsimd found include)
  find_package(xsimd CONFIG QUIET)
  if(xsimd_FOUND AND xsimd_VERSION VERSION_GREATER_EQUAL 8 AND xsimd_VERSION VERSION_LESS 9)
    get_target_property(dir xsimd INTERFACE_INCLUDE_DIRECTORIES)
    set(${found} ON PARENT_SCOPE)
    set(${include} "${dir}" PARENT_SCOPE)
  else()
    set(${found} OFF PARENT_SCOPE)
    set(${include} "" PARENT_SCOPE)
  endif()
endfunction()
