# warpweave_add_backend(<name> SOURCES <files...> MANIFEST <file.textproto> [OUTPUT_DIRECTORY <dir>])
#
# Builds a warpweave backend plugin: a shared library with the manifest embedded (as ww_manifest_text /
# ww_manifest_size), linked against nothing of the core (only the plugin ABI headers). Used in tree and by
# out-of-tree plugins through find_package(warpweave).
function(warpweave_add_backend name)
  cmake_parse_arguments(ARG "" "MANIFEST;OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
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
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
endfunction()
