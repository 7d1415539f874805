# Install rules: headers, the library, a CMake package (find_package(trnmx
# CONFIG) -> trnmx::trnmx, and trnmx::emu when the emulator is built), a
# pkg-config file, the emulator's program and machine files, and the license.
include(CMakePackageConfigHelpers)

install(TARGETS trnmx EXPORT trnmxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/trnmx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/generated/include/trnmx/version.h"
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trnmx)

# The emulator (TRNMX_BUILD_EMULATOR): library trnmx::emu with its headers
# (include/trnmx/emu/), and the machine descriptions. trnmx-emu and the
# library embed the presets, so nothing reads these files at run time unless
# asked to (--machine FILE, LoadMachineFile): they are the editable starting
# point for a machine of one's own, found from the package as
# trnmx_MACHINES_DIR.
set(TRNMX_INSTALL_MACHINESDIR ${CMAKE_INSTALL_DATADIR}/trnmx/machines)
if(TARGET trnmx_emu)
  install(TARGETS trnmx_emu EXPORT trnmxTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY emulator/include/trnmx/emu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/trnmx
    FILES_MATCHING PATTERN "*.h")
  install(DIRECTORY emulator/machines/ DESTINATION ${TRNMX_INSTALL_MACHINESDIR}
    FILES_MATCHING PATTERN "*.json")
  set(TRNMX_PACKAGE_HAS_EMU TRUE)
else()
  set(TRNMX_PACKAGE_HAS_EMU FALSE)
endif()

# Apache-2.0, as Highway and XNNPACK; CMAKE_INSTALL_DOCDIR is share/doc/trnmx.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(TRNMX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/trnmx)
install(EXPORT trnmxTargets NAMESPACE trnmx:: DESTINATION ${TRNMX_CMAKE_DIR})
configure_package_config_file(cmake/trnmxConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/trnmxConfig.cmake"
  INSTALL_DESTINATION ${TRNMX_CMAKE_DIR}
  PATH_VARS TRNMX_INSTALL_MACHINESDIR CMAKE_INSTALL_DOCDIR)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/trnmxConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/trnmxConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/trnmxConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/FindPthreadpool.cmake"
        DESTINATION ${TRNMX_CMAKE_DIR})

# The .pc file is relocatable: its prefix is found from ${pcfiledir}, so that
# `cmake --install BUILD --prefix P` (and Conan, and packagers' DESTDIR) give a
# file that points into P, not into the CMAKE_INSTALL_PREFIX of configure time.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(TRNMX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _trnmx_pc_up "/_/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/_")
  string(REGEX REPLACE "/$" "" _trnmx_pc_up "${_trnmx_pc_up}")
  set(TRNMX_PC_PREFIX "\${pcfiledir}/${_trnmx_pc_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(TRNMX_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(TRNMX_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# A static libtrnmx needs Highway and pthreadpool on the consumer's link line.
get_target_property(_trnmx_type trnmx TYPE)
if(_trnmx_type STREQUAL "STATIC_LIBRARY")
  set(TRNMX_PC_LIBS_EXTRA " -lhwy -lpthreadpool")
  set(TRNMX_PC_LIBS_PRIVATE "")
else()
  set(TRNMX_PC_LIBS_EXTRA "")
  set(TRNMX_PC_LIBS_PRIVATE "Libs.private: -lhwy -lpthreadpool")
endif()
configure_file(cmake/trnmx.pc.in "${CMAKE_CURRENT_BINARY_DIR}/trnmx.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/trnmx.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
