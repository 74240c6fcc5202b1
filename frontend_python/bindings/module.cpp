// warpweave._core: thin typed bindings over the core. Each area binds itself in its own file.
#include <cstdlib>

#include <nanobind/nanobind.h>

#include "ww/layout/error.hpp"

namespace nb = nanobind;

void bind_layout(nb::module_& m);
void bind_ir(nb::module_& m);
void bind_compiler(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_fast_call(nb::module_& m);
void bind_jit_cache(nb::module_& m);
void bind_plugins(nb::module_& m);

NB_MODULE(_core, m) {
  m.doc() = "warpweave core: layout algebra, compiler, runtime and plugin host";
  // Compiled functions and the JIT caches keep core objects (modules, launchers, layouts) in Python-level caches
  // that interpreter shutdown tears down after this module, so nanobind's leak report at exit names objects the
  // process is about to release anyway. WARPWEAVE_DEBUG_LEAKS=1 brings the report back for debugging bindings.
  const char* debug_leaks = std::getenv("WARPWEAVE_DEBUG_LEAKS");
  nb::set_leak_warnings(debug_leaks != nullptr && debug_leaks[0] == '1');
  // Violated preconditions are ValueError, wrong kinds of operands TypeError, as Python users expect.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ww::LayoutTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ww::LayoutError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  bind_layout(m);
  bind_ir(m);
  bind_compiler(m);
  bind_runtime(m);
  bind_fast_call(m);  // after bind_runtime: it drives its Launcher
  bind_jit_cache(m);
  bind_plugins(m);
}
