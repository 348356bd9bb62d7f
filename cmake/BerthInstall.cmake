# Installs headers, the library and a package config so find_package(berth) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A wheel (scikit-build-core) holds libberth beside berth._core, finding torch's libraries in the torch package
# next to it; no headers, no CMake package.
if(SKBUILD)
  set_target_properties(berth PROPERTIES INSTALL_RPATH "$ORIGIN;$ORIGIN/../torch/lib")
  install(TARGETS berth LIBRARY DESTINATION berth)
  return()
endif()

install(TARGETS berth EXPORT berthTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/berth DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/berth/config.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/berth)
install(EXPORT berthTargets NAMESPACE berth:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/berth)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/berthConfig.cmake.in
  ${PROJECT_BINARY_DIR}/berthConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/berth)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/berthConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/berthConfig.cmake ${PROJECT_BINARY_DIR}/berthConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/berth)
