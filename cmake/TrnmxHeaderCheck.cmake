# Compiles every public header alone (one translation unit each) and rejects
# public headers that reach into Highway, xsimd (outside inline/) or the
# emulator: public headers are plain C++20 (architecture page, principle 4).
#
# Headers under trnmx/inline/ (the optional xsimd layer) may include xsimd.
# They are compiled in a second target, ${library}_inline_header_check, linked
# to xsimd, when xsimd 8.x is found; otherwise they are only scanned for the
# forbidden includes and a message says that their compile check is skipped.
# trnmx itself never requires xsimd.
function(trnmx_add_header_check library include_root)
  file(GLOB_RECURSE _headers RELATIVE "${include_root}" CONFIGURE_DEPENDS
       "${include_root}/trnmx/*.h")
  set(_sources "")
  set(_inline_sources "")
  foreach(_header IN LISTS _headers)
    file(READ "${include_root}/${_header}" _text)
    if(_text MATCHES "#include[ \t]*[<\"]hwy/")
      message(FATAL_ERROR "public header ${_header} includes Highway")
    endif()
    if(_text MATCHES "#include[ \t]*[<\"]trnmx/emu/")
      message(FATAL_ERROR "public header ${_header} includes the emulator")
    endif()
    if(NOT _header MATCHES "^trnmx/inline/" AND _text MATCHES "#include[ \t]*[<\"]xsimd/")
      message(FATAL_ERROR "public header ${_header} includes xsimd outside trnmx/inline/")
    endif()
    string(MAKE_C_IDENTIFIER "${_header}" _id)
    set(_tu "${CMAKE_CURRENT_BINARY_DIR}/header_check/${_id}.cc")
    file(GENERATE OUTPUT "${_tu}" CONTENT "#include <${_header}>\n#include <${_header}>\n")
    if(_header MATCHES "^trnmx/inline/")
      list(APPEND _inline_sources "${_tu}")
    else()
      list(APPEND _sources "${_tu}")
    endif()
  endforeach()
  add_library(${library}_header_check OBJECT EXCLUDE_FROM_ALL ${_sources})
  target_link_libraries(${library}_header_check PRIVATE ${library})
  trnmx_set_compile_options(${library}_header_check)
  if(TRNMX_BUILD_TESTS)
    # Built as part of the test build so that CI exercises it.
    set_target_properties(${library}_header_check PROPERTIES EXCLUDE_FROM_ALL OFF)
  endif()

  # Only in trnmx's own builds: an application embedding trnmx with
  # add_subdirectory() should not get a find_package(xsimd) it did not ask for.
  if(NOT _inline_sources OR NOT (PROJECT_IS_TOP_LEVEL OR TRNMX_BUILD_TESTS))
    return()
  endif()
  include(TrnmxInlineArchs)
  trnmx_find_inline_xsimd(_have_xsimd _xsimd_include)
  if(NOT _have_xsimd)
    message(STATUS "trnmx: xsimd 8.x not found; compile check of the trnmx/inline/ headers skipped")
    return()
  endif()
  add_library(${library}_inline_header_check OBJECT EXCLUDE_FROM_ALL ${_inline_sources})
  target_link_libraries(${library}_inline_header_check PRIVATE ${library})
  target_include_directories(${library}_inline_header_check SYSTEM PRIVATE ${_xsimd_include})
  trnmx_set_compile_options(${library}_inline_header_check)
  if(TRNMX_BUILD_TESTS)
    set_target_properties(${library}_inline_header_check PROPERTIES EXCLUDE_FROM_ALL OFF)
  endif()
endfunction()
