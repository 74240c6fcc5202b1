# warpweave_add_backend(<name> SOURCES <files...> MANIFEST <file.textproto> [OUTPUT_DIRECTORY <dir>]
#                       [PYTHON_DIR <dir>] [INSTALL_DIR <dir>])
#
# Builds a warpweave backend plugin: a shared library with the manifest embedded (as ww_manifest_text /
# ww_manifest_size), linked against nothing of the core (only the plugin ABI headers). Used in tree and by
# out-of-tree plugins through find_package(warpweave).
#
# PYTHON_DIR: the backend's Python package (manifest.proto, PythonPackage). It is linked beside the library as
# <name>.python, so that edits to it take effect without a rebuild; `cmake --install` copies it.
#
# INSTALL_DIR (default: the variable WARPWEAVE_PLUGIN_INSTALL_DIR, if set): `cmake --install` puts the library
# there, and its Python package, as a real folder, beside it as <name>.python. A directory that the core searches
# (warpweave/plugins of an installed warpweave, or one named in WARPWEAVE_PLUGIN_PATH).
function(warpweave_add_backend name)
  cmake_parse_arguments(ARG "" "MANIFEST;OUTPUT_DIRECTORY;PYTHON_DIR;INSTALL_DIR" "SOURCES" ${ARGN})
  if(NOT ARG_INSTALL_DIR AND WARPWEAVE_PLUGIN_INSTALL_DIR)
    set(ARG_INSTALL_DIR ${WARPWEAVE_PLUGIN_INSTALL_DIR})
  endif()
  if(NOT ARG_MANIFEST)
    message(FATAL_ERROR "warpweave_add_backend(${name}): MANIFEST is required")
  endif()
  get_filename_component(manifest ${ARG_MANIFEST} ABSOLUTE)
  set(embedded ${CMAKE_CURRENT_BINARY_DIR}/${name}_manifest.c)
  add_custom_command(
    OUTPUT ${embedded}
    COMMAND ${CMAKE_COMMAND} -DIN=${manifest} -DOUT=${embedded} -P ${WARPWEAVE_PLUGIN_CMAKE_DIR}/WarpweaveEmbed.cmake
    DEPENDS ${manifest} ${WARPWEAVE_PLUGIN_CMAKE_DIR}/WarpweaveEmbed.cmake
    COMMENT "Embedding the manifest of ${name}"
    VERBATIM)
  add_library(${name} SHARED ${ARG_SOURCES} ${embedded})
  set_target_properties(${name} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden)
  target_include_directories(${name} PRIVATE ${WARPWEAVE_PLUGIN_INCLUDE_DIRS})
  target_compile_definitions(${name} PRIVATE BOOST_DLL_USE_STD_FS=1)
  target_compile_features(${name} PRIVATE cxx_std_17)
  target_link_options(${name} PRIVATE -static-libstdc++ -static-libgcc)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR})
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
    set(out_dir ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(ARG_PYTHON_DIR)
    get_filename_component(py_dir ${ARG_PYTHON_DIR} ABSOLUTE)
    if(NOT EXISTS ${py_dir}/__init__.py)
      message(FATAL_ERROR "warpweave_add_backend(${name}): PYTHON_DIR ${py_dir} has no __init__.py")
    endif()
    file(MAKE_DIRECTORY ${out_dir})
    file(CREATE_LINK ${py_dir} ${out_dir}/${name}.python SYMBOLIC)
  endif()
  if(ARG_INSTALL_DIR)
    install(TARGETS ${name} LIBRARY DESTINATION ${ARG_INSTALL_DIR})
    if(ARG_PYTHON_DIR)
      install(DIRECTORY ${py_dir}/ DESTINATION ${ARG_INSTALL_DIR}/${name}.python
              PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
    endif()
  endif()
endfunction()
