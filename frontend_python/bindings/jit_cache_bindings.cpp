// Bindings of the JIT cache.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ww/jit_cache/jit_cache.hpp"

namespace nb = nanobind;
namespace jc = ww::jit_cache;

void bind_jit_cache(nb::module_& m) {
  m.def("cache_key", [](const std::vector<std::string>& parts) {
    std::vector<std::string_view> v(parts.begin(), parts.end());
    return jc::key_of(v);
  });
  nb::class_<jc::Cache>(m, "JitCache")
      .def(nb::init<std::string>(), nb::arg("dir") = "")
      .def_prop_ro("dir", &jc::Cache::dir)
      .def_static("disabled_by_env", &jc::Cache::disabled_by_env)
      .def("path_of", &jc::Cache::path_of)
      .def("load", [](const jc::Cache& c, const std::string& key) -> nb::object {
        std::optional<jc::Entry> e;
        std::string problem;
        {
          nb::gil_scoped_release release;
          e = c.load(key, &problem);
        }
        // A file in the entry's place that is not this key's entry: a miss, and a warning that names the file.
        if (!problem.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, problem.c_str(), 1) != 0) throw nb::python_error();
        if (!e) return nb::none();
        return nb::make_tuple(nb::bytes(reinterpret_cast<const char*>(e->payload.data()), e->payload.size()), e->meta);
      })
      .def("store", [](const jc::Cache& c, const std::string& key, nb::bytes payload, const std::string& meta) {
        jc::Entry e;
        e.payload.assign(reinterpret_cast<const uint8_t*>(payload.c_str()),
                         reinterpret_cast<const uint8_t*>(payload.c_str()) + payload.size());
        e.meta = meta;
        nb::gil_scoped_release release;
        return c.store(key, e);
      });
}
