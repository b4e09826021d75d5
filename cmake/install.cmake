# Installed layout (docs/design.md §Versions, README "Layout"): lib/libpyop.so*, lib/pyop/artifacts/...,
# include/pyop/*.h, bin/pyop, lib/cmake/pyop/, lib/pkgconfig/pyop.pc.
# Nothing installed refers to the build tree; the tree works from any prefix.
include(CMakePackageConfigHelpers)

# The include directory comes from the target's INSTALL_INTERFACE (src/):
# no INCLUDES DESTINATION here, which would list it a second time.
install(TARGETS pyop EXPORT pyopTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/pyop/pyop.h include/pyop/bridge_abi.h
              ${PROJECT_BINARY_DIR}/include/pyop/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pyop)
install(EXPORT pyopTargets NAMESPACE pyop::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pyop)
configure_package_config_file(cmake/pyopConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pyopConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pyop)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pyopConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pyopConfig.cmake ${PROJECT_BINARY_DIR}/pyopConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pyop)
# pyop.pc holds absolute, normalised paths, so pkg-config never hands out a
# ".../lib/pkgconfig/../../lib" that a host would record as its RUNPATH (a
# ${pcfiledir}-relative file cannot avoid the "..": pkg-config does not
# normalise, and a libdir such as lib/x86_64-linux-gnu needs one "../" per
# component, which the old file got wrong). They are computed
# when installing, from the prefix really installed to (`cmake --install
# --prefix` included): CMAKE_INSTALL_LIBDIR / CMAKE_INSTALL_INCLUDEDIR
# relative to it, or absolute as given. Below the prefix they are written
# as ${prefix}/..., so --define-variable=prefix=... follows a moved tree.
# Now: the project's description and version; the paths stay placeholders.
foreach(_v PYOP_PC_PREFIX PYOP_PC_LIBDIR PYOP_PC_INCLUDEDIR)
  set(${_v} "@${_v}@")
endforeach()
configure_file(cmake/pyop.pc.in ${PROJECT_BINARY_DIR}/pyop.pc.in @ONLY)
unset(PYOP_PC_PREFIX)
unset(PYOP_PC_LIBDIR)
unset(PYOP_PC_INCLUDEDIR)
set(_pyop_pc_code [=[
  # Absolute and normalised: dir, or <prefix>/dir when relative (file(INSTALL)
  # adds DESTDIR itself).
  function(_pyop_pc_dir dir out)
    if(NOT IS_ABSOLUTE "${dir}")
      set(dir "${PYOP_PC_PREFIX}/${dir}")
    endif()
    get_filename_component(dir "${dir}" ABSOLUTE)
    set(full "${dir}")
    string(LENGTH "${PYOP_PC_PREFIX}/" n)
    string(SUBSTRING "${dir}/" 0 ${n} head)
    if(head STREQUAL "${PYOP_PC_PREFIX}/" AND NOT PYOP_PC_PREFIX STREQUAL "/")
      string(SUBSTRING "${dir}" ${n} -1 rest)
      set(dir "\${prefix}/${rest}")
      if(rest STREQUAL "")
        set(dir "\${prefix}")
      endif()
    endif()
    set(${out} "${dir}" PARENT_SCOPE)
    set(${out}_FULL "${full}" PARENT_SCOPE)
  endfunction()
  get_filename_component(PYOP_PC_PREFIX "${CMAKE_INSTALL_PREFIX}" ABSOLUTE)
  _pyop_pc_dir("@PYOP_PC_LIBDIR_IN@" PYOP_PC_LIBDIR)
  _pyop_pc_dir("@PYOP_PC_INCLUDEDIR_IN@" PYOP_PC_INCLUDEDIR)
  configure_file("@PROJECT_BINARY_DIR@/pyop.pc.in" "@PROJECT_BINARY_DIR@/pyop.pc" @ONLY)
  file(INSTALL DESTINATION "${PYOP_PC_LIBDIR_FULL}/pkgconfig" TYPE FILE
       FILES "@PROJECT_BINARY_DIR@/pyop.pc")
]=])
set(PYOP_PC_LIBDIR_IN "${CMAKE_INSTALL_LIBDIR}")
set(PYOP_PC_INCLUDEDIR_IN "${CMAKE_INSTALL_INCLUDEDIR}")
string(CONFIGURE "${_pyop_pc_code}" _pyop_pc_code @ONLY)
install(CODE "${_pyop_pc_code}")
