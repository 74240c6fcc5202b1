// Bindings of the compiler driver. A failed compile raises warpweave._core.CompileError carrying the stage, the
// diagnostics (file, line, column, message) and the cubin tool's log.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "ww/compiler/compiler.hpp"

namespace nb = nanobind;
namespace wc = ww::compiler;

namespace {

nb::object g_compile_error;

[[noreturn]] void raise_compile_error(const wc::CompileError& e) {
  nb::list diags;
  for (auto& d : e.diagnostics()) diags.append(nb::make_tuple(d.file, d.line, d.col, d.message));
  nb::object exc = g_compile_error(nb::str(e.what()));
  exc.attr("stage") = nb::str(wc::stage_name(e.stage()));
  exc.attr("diagnostics") = diags;
  exc.attr("log") = nb::str(e.log().c_str(), e.log().size());
  PyErr_SetObject(g_compile_error.ptr(), exc.ptr());
  throw nb::python_error();
}

wc::Target make_target(const nb::dict& t) {
  wc::Target target = wc::default_target(nb::cast<std::string>(t["name"]));
  if (t.contains("llvm_cpu")) target.llvm_cpu = nb::cast<std::string>(t["llvm_cpu"]);
  if (t.contains("ptx_features")) target.ptx_features = nb::cast<std::string>(t["ptx_features"]);
  if (t.contains("jit_arch")) target.jit_arch = nb::cast<std::string>(t["jit_arch"]);
  return target;
}

// A compile on a thread of its own whose result is dropped (the compiler warm-up). join() waits for the thread's
// very end, its thread_local destructors included: MLIR's per-thread caches lock their context's mutexes there,
// and a Python thread's join returns before they run, so a fork right after it could hand the child a mutex
// held by a thread the child does not have. The thread never touches Python.
class BackgroundCompile {
 public:
  BackgroundCompile(std::string mlir, wc::Target target, wc::CompileOptions options, bool want_cubin)
      : thread_([this, mlir = std::move(mlir), target = std::move(target), options = std::move(options),
                 want_cubin] {
          try {
            if (want_cubin) {
              wc::compile(mlir, target, options);
            } else {
              wc::mlir_to_ptx(mlir, target, options, nullptr);
            }
          } catch (...) {  // only saves time: the kernel's own compile reports any problem
          }
          done_.store(true, std::memory_order_release);
        }) {}
  ~BackgroundCompile() { join(); }

  void join() {
    std::lock_guard lock(join_mutex_);
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};  // before thread_: the thread may set it at once
  std::mutex join_mutex_;
  std::thread thread_;
};

}  // namespace

void bind_compiler(nb::module_& m) {
  g_compile_error = nb::borrow(nb::exception<wc::CompileError>(m, "CompileError", PyExc_RuntimeError));

  // compile(mlir, target={"name": "sm_90a", ...}, ...) -> dict(ptx, cubin, jit_log, cubin_tool, timings, ...)
  m.def("compile", [](const std::string& mlir, const nb::dict& target, int opt_level, bool verbose_ptxas,
                      bool want_llvm_ir, bool want_optimized_mlir, bool line_info, const std::string& source_name,
                      const std::vector<std::string>& ptxas_options, bool want_cubin) {
    wc::CompileOptions o;
    o.opt_level = opt_level;
    o.verbose_ptxas = verbose_ptxas;
    o.want_llvm_ir = want_llvm_ir;
    o.want_optimized_mlir = want_optimized_mlir;
    o.line_info = line_info;
    o.source_name = source_name;
    o.ptxas_options = ptxas_options;
    wc::CompileResult r;
    try {
      wc::Target t = make_target(target);
      nb::gil_scoped_release release;
      if (want_cubin) {
        r = wc::compile(mlir, t, o);
      } else {
        r.ptx = wc::mlir_to_ptx(mlir, t, o, &r);
      }
    } catch (const wc::CompileError& e) {
      raise_compile_error(e);
    }
    nb::dict out;
    out["ptx"] = nb::str(r.ptx.c_str(), r.ptx.size());
    out["cubin"] = nb::bytes(reinterpret_cast<const char*>(r.cubin.data()), r.cubin.size());
    out["jit_log"] = nb::str(r.jit_log.c_str(), r.jit_log.size());
    out["cubin_tool"] = r.cubin_tool;
    out["llvm_ir"] = nb::str(r.llvm_ir.c_str(), r.llvm_ir.size());
    out["mlir"] = nb::str(r.mlir.c_str(), r.mlir.size());
    nb::list warnings;
    for (auto& w : r.warnings) warnings.append(w.str());
    out["warnings"] = warnings;
    nb::dict t;
    t["parse_ms"] = r.timings.parse_ms;
    t["lower_ms"] = r.timings.lower_ms;
    t["llvm_opt_ms"] = r.timings.llvm_opt_ms;
    t["codegen_ms"] = r.timings.codegen_ms;
    t["cubin_ms"] = r.timings.cubin_ms;
    out["timings"] = t;
    return out;
  }, nb::arg("mlir"), nb::arg("target"), nb::arg("opt_level") = 3, nb::arg("verbose_ptxas") = false,
     nb::arg("want_llvm_ir") = false, nb::arg("want_optimized_mlir") = false, nb::arg("line_info") = false,
     nb::arg("source_name") = "<warpweave>", nb::arg("ptxas_options") = std::vector<std::string>{},
     nb::arg("want_cubin") = true);

  nb::class_<BackgroundCompile>(m, "BackgroundCompile")
      .def("join", &BackgroundCompile::join, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("done", &BackgroundCompile::done);
  // start_background_compile(mlir, target, ...) -> BackgroundCompile: compiles on a new thread, keeps no result.
  m.def("start_background_compile", [](const std::string& mlir, const nb::dict& target, int opt_level,
                                       bool line_info, bool want_cubin) {
    wc::CompileOptions o;
    o.opt_level = opt_level;
    o.line_info = line_info;
    return std::make_unique<BackgroundCompile>(mlir, make_target(target), std::move(o), want_cubin);
  }, nb::arg("mlir"), nb::arg("target"), nb::arg("opt_level") = 3, nb::arg("line_info") = false,
     nb::arg("want_cubin") = true);

  m.def("set_search_dirs", [](const std::vector<std::string>& dirs) { wc::set_search_dirs(dirs); });
  m.def("disassemble_sass", [](nb::bytes cubin, const std::string& search_dirs) {
    std::vector<uint8_t> c(reinterpret_cast<const uint8_t*>(cubin.c_str()),
                           reinterpret_cast<const uint8_t*>(cubin.c_str()) + cubin.size());
    return wc::disassemble_sass(c, search_dirs);
  }, nb::arg("cubin"), nb::arg("search_dirs") = "");
  m.def("sass_tool_available", [](const std::string& dirs) { return wc::sass_tool_available(dirs); },
        nb::arg("search_dirs") = "");
}
