# Optional peers: libraries that tests and benchmarks compare trnmx with
# (oneDNN, OpenBLAS, Eigen, MPFR). A peer that is missing or broken never
# fails trnmx's configure: it is reported with message(STATUS) and what needs
# it is not built and not registered.
#
# find_package(<Pkg> QUIET) alone is not enough: QUIET does not stop a
# package's own config file from failing. Debian 12's dnnl-config.cmake calls
# find_package(OpenCL REQUIRED), and libdnnl-dev only *recommends*
# ocl-icd-opencl-dev, so on a machine without it even
# find_package(dnnl CONFIG QUIET) aborts the configure. Each config package is
# therefore first found, compiled against and linked in a child CMake run
# (a child `cmake` run of the probe project in cmake/probes/), and trnmx's own
# find_package() runs only when that probe succeeded.
#
#   trnmx_find_optional_package(<Pkg> FOR <what needs it> SOURCE <probe.cc>
#       [VERSION <min>] [TARGETS <imported targets>...]
#       [LIBRARIES_VAR <var>] [INCLUDE_DIRS_VAR <var>] [HINT <Debian package>]
#       [DEPENDS <packages its config looks for>...])
#     Sets TRNMX_HAVE_<Pkg> (ON/OFF); when ON, find_package(<Pkg> CONFIG) has
#     run in the caller's scope.
#
#   trnmx_find_optional_library(<Name> TARGET <new target> FOR <what needs it>
#       SOURCE <probe.cc> HEADER <file> LIBRARIES <name>... [HINT <Debian package>])
#     For libraries without a CMake package (MPFR): find_path/find_library
#     (cache variables <Name>_INCLUDE_DIR, <Name>_LIBRARY, <NAME2>_LIBRARY, ...,
#     which a user may set) and a link probe. Sets TRNMX_HAVE_<Name> and, when
#     ON, defines the INTERFACE IMPORTED target <new target>.
#
# Probe results are cached per peer together with a fingerprint of their
# inputs (search paths, <Pkg>_DIR, the DEPENDS' hints, the probe source, the
# compiler): a re-configure with the same inputs does not probe again;
# changing e.g. -Ddnnl_DIR or -DOpenCL_INCLUDE_DIR probes again.
include_guard(GLOBAL)

# _trnmx_probe_cached(<peer> <fingerprint> <out_var>): <out_var> is the cached
# result (ON/OFF) for this fingerprint, or empty when the peer must be probed.
function(_trnmx_probe_cached peer fingerprint out_var)
  if(DEFINED CACHE{TRNMX_PEER_${peer}_FINGERPRINT}
     AND "${TRNMX_PEER_${peer}_FINGERPRINT}" STREQUAL "${fingerprint}")
    set(${out_var} "${TRNMX_PEER_${peer}_RESULT}" PARENT_SCOPE)
  else()
    set(${out_var} "" PARENT_SCOPE)
  endif()
endfunction()

function(_trnmx_probe_store peer fingerprint result reason)
  set(TRNMX_PEER_${peer}_FINGERPRINT "${fingerprint}" CACHE INTERNAL "")
  set(TRNMX_PEER_${peer}_RESULT "${result}" CACHE INTERNAL "")
  set(TRNMX_PEER_${peer}_REASON "${reason}" CACHE INTERNAL "")
endfunction()

# The first error of a failed child configure or build: the "CMake Error"
# paragraph, else the first compiler/linker line that says "error".
function(_trnmx_probe_reason output out_var)
  string(REPLACE "\r" "" output "${output}")
  set(reason "")
  string(FIND "${output}" "CMake Error" at)
  if(output MATCHES "Could not find a package configuration file provided by \"([^\"]+)\"")
    set(reason "no CMake package ${CMAKE_MATCH_1} found")
  elseif(at GREATER_EQUAL 0)
    # The message under "CMake Error at FILE:LINE (command):", up to its
    # first blank line.
    string(SUBSTRING "${output}" ${at} 800 reason)
    string(REGEX REPLACE "^CMake Error[^\n]*\n" "" reason "${reason}")
    string(REGEX REPLACE "\n[ \t]*\n.*" "" reason "${reason}")
    string(REGEX REPLACE "\nCall Stack.*" "" reason "${reason}")
  else()
    string(REGEX MATCH "[^\n]*[Ee]rror[^\n]*" reason "${output}")
  endif()
  string(REGEX REPLACE "[ \t\n]+" " " reason "${reason}")
  string(STRIP "${reason}" reason)
  if(reason STREQUAL "")
    set(reason "probe failed")
  endif()
  set(${out_var} "${reason}" PARENT_SCOPE)
endfunction()

function(_trnmx_report_peer peer have what hint log)
  if(have)
    message(STATUS "trnmx: ${peer} found: ${what} enabled")
  else()
    set(install_hint "")
    if(hint)
      set(install_hint "; install ${hint} to enable")
    endif()
    message(STATUS "trnmx: ${peer} not usable, skipped: ${what}${install_hint} "
                   "(${TRNMX_PEER_${peer}_REASON}; log: ${log})")
  endif()
endfunction()

# The child run sees what steers a find_package() in this one: search paths
# and the <Name>_DIR / <Name>_ROOT / <Name>_INCLUDE_DIR / <Name>_LIBRARY cache
# entries a user may have set, for the peer and for its own dependencies
# (names: DEPENDS of trnmx_find_optional_package, e.g. OpenCL for oneDNN).
# Only those, so that the fingerprint does not change when this project's
# own find_package() calls add entries for other packages.
function(_trnmx_probe_search_settings names out_var)
  list(JOIN names "|" names_regex)
  set(text "")
  foreach(var CMAKE_PREFIX_PATH CMAKE_FIND_ROOT_PATH CMAKE_SYSROOT CMAKE_IGNORE_PATH
              CMAKE_IGNORE_PREFIX_PATH CMAKE_LIBRARY_PATH CMAKE_INCLUDE_PATH
              CMAKE_FIND_USE_PACKAGE_REGISTRY CMAKE_CXX_FLAGS CMAKE_EXE_LINKER_FLAGS)
    if(DEFINED ${var})
      string(APPEND text "set(${var} [==[${${var}}]==])\n")
    endif()
  endforeach()
  get_cmake_property(cache_vars CACHE_VARIABLES)
  list(SORT cache_vars)
  foreach(var IN LISTS cache_vars)
    if(var MATCHES "^(${names_regex})_(DIR|ROOT|INCLUDE_DIR|LIBRARY)$"
       AND NOT "${${var}}" MATCHES "-NOTFOUND$")
      string(APPEND text "set(${var} [==[${${var}}]==])\n")
    endif()
  endforeach()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# The probe project's input file for <pkg> and its fingerprint, from the
# arguments of trnmx_find_optional_package().
function(_trnmx_probe_inputs pkg out_inputs out_fingerprint)
  cmake_parse_arguments(ARG "" "FOR;SOURCE;VERSION;LIBRARIES_VAR;INCLUDE_DIRS_VAR;HINT"
                        "TARGETS;DEPENDS" ${ARGN})
  set(source "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/probes/${ARG_SOURCE}")
  _trnmx_probe_search_settings("${pkg};${ARG_DEPENDS}" inputs)
  string(APPEND inputs
    "set(TRNMX_PROBE_PACKAGE [==[${pkg}]==])\n"
    "set(TRNMX_PROBE_VERSION [==[${ARG_VERSION}]==])\n"
    "set(TRNMX_PROBE_TARGETS [==[${ARG_TARGETS}]==])\n"
    "set(TRNMX_PROBE_LIBRARIES_VAR [==[${ARG_LIBRARIES_VAR}]==])\n"
    "set(TRNMX_PROBE_INCLUDE_DIRS_VAR [==[${ARG_INCLUDE_DIRS_VAR}]==])\n"
    "set(TRNMX_PROBE_SOURCE [==[${source}]==])\n")
  file(SHA256 "${source}" source_hash)
  string(SHA256 fingerprint "${inputs}${source_hash}${CMAKE_CXX_COMPILER}")
  set(${out_inputs} "${inputs}" PARENT_SCOPE)
  set(${out_fingerprint} "${fingerprint}" PARENT_SCOPE)
endfunction()

function(_trnmx_probe_config_package pkg)
  set(probes "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/probes")
  cmake_parse_arguments(ARG "" "FOR;SOURCE;VERSION;LIBRARIES_VAR;INCLUDE_DIRS_VAR;HINT"
                        "TARGETS;DEPENDS" ${ARGN})
  set(work "${CMAKE_BINARY_DIR}/CMakeFiles/trnmx_probes/${pkg}")
  _trnmx_probe_inputs(${pkg} inputs fingerprint ${ARGN})
  _trnmx_probe_cached(${pkg} "${fingerprint}" have)
  if(have STREQUAL "")
    file(REMOVE_RECURSE "${work}")
    file(WRITE "${work}/inputs.cmake" "${inputs}")
    # A child `cmake` process rather than try_compile(PROJECT): try_compile
    # turns a failed child configure into a fatal error of this one.
    execute_process(
      COMMAND "${CMAKE_COMMAND}" -S "${probes}" -B "${work}/build" -G "${CMAKE_GENERATOR}"
              "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
              "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
              "-DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}"
              "-DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}"
              -DCMAKE_BUILD_TYPE=Release "-DTRNMX_PROBE_INPUTS=${work}/inputs.cmake"
      RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
    if(rc EQUAL 0)
      execute_process(COMMAND "${CMAKE_COMMAND}" --build "${work}/build"
        RESULT_VARIABLE rc OUTPUT_VARIABLE build_output ERROR_VARIABLE build_output)
      string(APPEND output "${build_output}")
    endif()
    if(rc EQUAL 0)
      set(have ON)
    else()
      set(have OFF)
    endif()
    file(WRITE "${work}/probe.log" "${output}")
    set(reason "")
    if(NOT have)
      _trnmx_probe_reason("${output}" reason)
    endif()
    _trnmx_probe_store(${pkg} "${fingerprint}" ${have} "${reason}")
  endif()
  _trnmx_report_peer(${pkg} ${have} "${ARG_FOR}" "${ARG_HINT}" "${work}/probe.log")
  set(TRNMX_HAVE_${pkg} ${have} PARENT_SCOPE)
endfunction()

# After a successful probe, trnmx's own find_package() adds cache entries
# (<Pkg>_DIR, its dependencies' hints) with the values the probe found; the
# fingerprint is taken again so that the next configure does not re-probe
# for them.
function(_trnmx_probe_refingerprint pkg)
  _trnmx_probe_inputs(${pkg} inputs fingerprint ${ARGN})
  _trnmx_probe_store(${pkg} "${fingerprint}" ON "")
endfunction()

macro(trnmx_find_optional_package _trnmx_pkg)
  _trnmx_probe_config_package(${_trnmx_pkg} ${ARGN})
  if(TRNMX_HAVE_${_trnmx_pkg})
    cmake_parse_arguments(_trnmx_opt "" "VERSION" "" ${ARGN})
    # Succeeds: the probe has just found the same package with the same inputs.
    find_package(${_trnmx_pkg} ${_trnmx_opt_VERSION} CONFIG QUIET)
    if(${_trnmx_pkg}_FOUND)
      _trnmx_probe_refingerprint(${_trnmx_pkg} ${ARGN})
    else()
      message(STATUS "trnmx: ${_trnmx_pkg} passed its probe but find_package() failed; skipped")
      set(TRNMX_HAVE_${_trnmx_pkg} OFF)
    endif()
  endif()
endmacro()

function(trnmx_find_optional_library name)
  set(probes "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/probes")
  cmake_parse_arguments(ARG "" "TARGET;FOR;SOURCE;HEADER;HINT" "LIBRARIES" ${ARGN})
  set(work "${CMAKE_BINARY_DIR}/CMakeFiles/trnmx_probes/${name}")
  find_path(${name}_INCLUDE_DIR ${ARG_HEADER})
  set(libraries "")
  set(missing "")
  foreach(lib IN LISTS ARG_LIBRARIES)
    string(TOUPPER "${lib}" var)
    find_library(${var}_LIBRARY ${lib})
    list(APPEND libraries "${${var}_LIBRARY}")
    if(NOT ${var}_LIBRARY)
      list(APPEND missing "lib${lib}")
    endif()
  endforeach()
  if(NOT ${name}_INCLUDE_DIR)
    list(APPEND missing "${ARG_HEADER}")
  endif()
  file(SHA256 "${probes}/${ARG_SOURCE}" source_hash)
  string(SHA256 fingerprint
         "${${name}_INCLUDE_DIR};${libraries};${source_hash};${CMAKE_CXX_COMPILER}")
  _trnmx_probe_cached(${name} "${fingerprint}" have)
  if(have STREQUAL "")
    if(missing)
      list(JOIN missing ", " missing)
      set(have OFF)
      set(reason "not found: ${missing}")
      file(REMOVE_RECURSE "${work}")
      file(WRITE "${work}/probe.log" "${reason}\n")
    else()
      file(REMOVE_RECURSE "${work}")
      try_compile(have
        SOURCES "${probes}/${ARG_SOURCE}"
        CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${${name}_INCLUDE_DIR}"
        LINK_LIBRARIES ${libraries}
        NO_CACHE
        OUTPUT_VARIABLE output)
      file(WRITE "${work}/probe.log" "${output}")
      set(reason "")
      if(NOT have)
        _trnmx_probe_reason("${output}" reason)
      endif()
    endif()
    if(have)
      set(have ON)
    else()
      set(have OFF)
    endif()
    _trnmx_probe_store(${name} "${fingerprint}" ${have} "${reason}")
  endif()
  _trnmx_report_peer(${name} ${have} "${ARG_FOR}" "${ARG_HINT}" "${work}/probe.log")
  if(have AND NOT TARGET ${ARG_TARGET})
    add_library(${ARG_TARGET} INTERFACE IMPORTED)
    target_include_directories(${ARG_TARGET} INTERFACE "${${name}_INCLUDE_DIR}")
    target_link_libraries(${ARG_TARGET} INTERFACE ${libraries})
  endif()
  set(TRNMX_HAVE_${name} ${have} PARENT_SCOPE)
endfunction()
