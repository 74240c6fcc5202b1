# The installed layout of the Python package: what `pip install .` / `pip wheel .` (scikit-build-core, pyproject.toml)
# put into site-packages. Included by the top-level CMakeLists.txt when WW_INSTALL_PYTHON is on (a wheel build).
#
#   warpweave/                      the frontend package (frontend_python/warpweave), without the build outputs a
#                                   checkout's editable build leaves in it
#     _core.cpython-312-*.so        the extension, MLIR/LLVM inside (cmake/WarpweaveMLIR.cmake)
#     libprotobuf.so.32             beside it (RUNPATH $ORIGIN): the GPU machine has none
#     libww_nvptxcompiler.so        beside it where the build found NVIDIA's PTX compiler library (whole-program
#                                   assembly in process; core/compiler/CMakeLists.txt)
#     plugins/ww_backend_*.so       the backends, their manifests embedded, and their Python packages as real
#     plugins/ww_backend_*.python/  folders (links into backends/ in a build tree)
#     examples/                     frontend_python/examples, for `python -m warpweave main`
#     include/, lib/cmake/warpweave/, share/warpweave/proto/   the plugin SDK (cmake/WarpweaveInstall.cmake)
#   warpweave_pipelines/            pipelines/warpweave_pipelines (public as warpweave.pipeline)
#   warpweave_conformance/          conformance/warpweave_conformance (python -m warpweave conformance)
# The plugins are installed by warpweave_add_backend() (WARPWEAVE_PLUGIN_INSTALL_DIR, backends/CMakeLists.txt).
include_guard(GLOBAL)

set(_ww_py_excludes
  PATTERN __pycache__ EXCLUDE
  PATTERN "*.pyc" EXCLUDE
  # A checkout's own build outputs (WW_PACKAGE_OUTPUT_DIR of a non-wheel build): the wheel's come from this build.
  PATTERN "_core*.so" EXCLUDE
  PATTERN "libprotobuf.so*" EXCLUDE
  PATTERN "libww_nvptxcompiler.so" EXCLUDE
  REGEX "/frontend_python/warpweave/plugins$" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/frontend_python/warpweave/ DESTINATION warpweave ${_ww_py_excludes})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/frontend_python/examples/ DESTINATION warpweave/examples ${_ww_py_excludes})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/pipelines/warpweave_pipelines DESTINATION . ${_ww_py_excludes})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/conformance/warpweave_conformance DESTINATION . ${_ww_py_excludes})

if(TARGET _core)
  install(TARGETS _core LIBRARY DESTINATION warpweave)
  # The copy the build placed next to the extension (a real file; the system's libprotobuf.so is a link).
  install(FILES ${WW_PACKAGE_OUTPUT_DIR}/libprotobuf.so.32 DESTINATION warpweave)
endif()
if(TARGET ww_nvptxcompiler)
  install(TARGETS ww_nvptxcompiler LIBRARY DESTINATION warpweave)
endif()
