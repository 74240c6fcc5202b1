# The plugin SDK: what a third party needs to build a backend plugin against an installed warpweave, without the
# core's sources or its build (DESIGN.md, invariant 4):
#   include/warpweave/plugin_abi.h, plugin.hpp       the versioned C ABI and its C++ helpers
#   include/warpweave/plugin_attrs.hpp, tma_encoding.hpp   hook attributes, TMA tensor maps
#   share/warpweave/proto/manifest.proto              the manifest schema
#   lib/cmake/warpweave/                              find_package(warpweave): warpweave_add_backend()
# Included by the top-level CMakeLists.txt, and by plugins_api/CMakeLists.txt for an SDK-only install.
#
#   cmake --install build --prefix <dir>
#   find_package(warpweave CONFIG REQUIRED)   # with CMAKE_PREFIX_PATH=<dir>
#   warpweave_add_backend(my_backend SOURCES my_backend.cpp MANIFEST my_backend.textproto)
include_guard(GLOBAL)
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

get_filename_component(WW_SDK_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT DEFINED WW_SDK_VERSION)
  set(WW_SDK_VERSION ${PROJECT_VERSION})
endif()
set(WW_SDK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/warpweave)

install(FILES ${WW_SDK_ROOT}/plugins_api/include/warpweave/plugin_abi.h
              ${WW_SDK_ROOT}/plugins_api/include/warpweave/plugin.hpp
              ${WW_SDK_ROOT}/plugins_api/include/warpweave/plugin_attrs.hpp
              ${WW_SDK_ROOT}/plugins_api/include/warpweave/tma_encoding.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/warpweave COMPONENT sdk)
install(FILES ${WW_SDK_ROOT}/plugins_api/proto/manifest.proto
        DESTINATION ${CMAKE_INSTALL_DATADIR}/warpweave/proto COMPONENT sdk)

configure_package_config_file(${WW_SDK_ROOT}/cmake/warpweaveConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/warpweave-sdk/warpweaveConfig.cmake
  INSTALL_DESTINATION ${WW_SDK_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR)
# 0.x: any 0.y SDK builds plugins of ABI version 1; the core checks the ABI version itself when loading.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/warpweave-sdk/warpweaveConfigVersion.cmake
  VERSION ${WW_SDK_VERSION} COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/warpweave-sdk/warpweaveConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/warpweave-sdk/warpweaveConfigVersion.cmake
              ${WW_SDK_ROOT}/cmake/WarpweavePlugin.cmake
              ${WW_SDK_ROOT}/cmake/WarpweaveEmbed.cmake
        DESTINATION ${WW_SDK_CMAKE_DIR} COMPONENT sdk)
