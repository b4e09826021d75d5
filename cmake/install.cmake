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
configure_file(cmake/pyop.pc.in ${PROJECT_BINARY_DIR}/pyop.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pyop.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
