// Bindings of the runtime: the CUDA driver loaded with dlopen. Driver errors raise warpweave._core.CudaError.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "launcher.hpp"
#include "ww/runtime/runtime.hpp"

namespace nb = nanobind;
namespace rt = ww::runtime;

namespace {

nb::dict device_dict(const rt::DeviceInfo& d) {
  nb::dict r;
  r["ordinal"] = d.ordinal;
  r["name"] = d.name;
  r["compute_capability"] = nb::make_tuple(d.cc_major, d.cc_minor);
  r["multiprocessor_count"] = d.multiprocessor_count;
  r["max_threads_per_block"] = d.max_threads_per_block;
  r["max_shared_memory_per_block_optin"] = d.max_shared_memory_per_block_optin;
  r["l2_cache_size"] = d.l2_cache_size;
  r["total_memory"] = d.total_memory;
  r["cluster_launch"] = d.cluster_launch;
  return r;
}

rt::Dim3 dim3(const std::vector<unsigned>& v, const char* what) {
  if (v.empty() || v.size() > 3) throw std::invalid_argument(std::string(what) + " needs 1 to 3 extents");
  return rt::Dim3(v[0], v.size() > 1 ? v[1] : 1, v.size() > 2 ? v[2] : 1);
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::exception<rt::CudaError>(m, "CudaError", PyExc_RuntimeError);
  m.def("driver_available", &rt::driver_available);
  m.def("driver_unavailable_reason", &rt::driver_unavailable_reason);
  m.def("device_count", &rt::device_count);
  m.def("device_info", [](int i) { return device_dict(rt::device_info(i)); });
  m.def("current_device", &rt::current_device);
  m.def("set_device", &rt::set_device);
  nb::enum_<rt::MemoryType>(m, "MemoryType")
      .value("unknown", rt::MemoryType::unknown)
      .value("host", rt::MemoryType::host)
      .value("device", rt::MemoryType::device)
      .value("array", rt::MemoryType::array)
      .value("unified", rt::MemoryType::unified);
  m.def("pointer_memory_type", &rt::pointer_memory_type, nb::arg("address"));
  m.def("synchronize", []() {
    nb::gil_scoped_release release;
    rt::synchronize();
  });

  nb::class_<rt::Function>(m, "Function")
      .def_prop_ro("name", &rt::Function::name)
      .def_prop_ro("num_regs", &rt::Function::num_regs)
      .def_prop_ro("local_size_bytes", &rt::Function::local_size_bytes)
      .def_prop_ro("static_shared_size_bytes", &rt::Function::static_shared_size_bytes)
      .def_prop_ro("max_threads_per_block", &rt::Function::max_threads_per_block)
      .def("set_max_dynamic_shared_memory", &rt::Function::set_max_dynamic_shared_memory)
      .def("attribute", &rt::Function::attribute)
      .def("set_attribute", &rt::Function::set_attribute);

  nb::class_<rt::Module>(m, "Module")
      .def_static("load", [](nb::bytes image) { return rt::Module::load(image.c_str(), image.size()); })
      .def("function", &rt::Module::function)
      .def_prop_ro("jit_log", &rt::Module::jit_log);

  // launch(function, grid, block, cluster, smem, stream, params, offsets): params is one buffer holding every
  // argument; offsets[i] is where argument i starts in it.
  m.def("launch", [](const rt::Function& f, const std::vector<unsigned>& grid, const std::vector<unsigned>& block,
                     const std::vector<unsigned>& cluster, size_t smem, uintptr_t stream, nb::bytes params,
                     const std::vector<size_t>& offsets, bool cooperative, bool pdl,
                     const std::vector<unsigned>& preferred_cluster, uint64_t launch_completion_event,
                     int launch_completion_event_flags, uint64_t programmatic_event, int programmatic_event_flags,
                     bool programmatic_event_trigger_at_block_start) {
    void* ptrs[256];
    if (offsets.size() > 256) throw std::invalid_argument("launch: more than 256 kernel parameters");
    char* base = const_cast<char*>(params.c_str());
    for (size_t i = 0; i < offsets.size(); ++i) {
      if (offsets[i] >= params.size()) throw std::invalid_argument("launch: a parameter offset is past the buffer");
      ptrs[i] = base + offsets[i];
    }
    rt::Dim3 c = cluster.empty() ? rt::Dim3(0, 0, 0) : dim3(cluster, "cluster");
    rt::Dim3 pc = preferred_cluster.empty() ? rt::Dim3(0, 0, 0) : dim3(preferred_cluster, "preferred cluster");
    rt::LaunchConfig config{dim3(grid, "grid"), dim3(block, "block"), c, smem, rt::StreamRef(stream), cooperative,
                            pdl, pc};
    config.launch_completion_event = launch_completion_event;
    config.launch_completion_event_flags = launch_completion_event_flags;
    config.programmatic_event = programmatic_event;
    config.programmatic_event_flags = programmatic_event_flags;
    config.programmatic_event_trigger_at_block_start = programmatic_event_trigger_at_block_start;
    rt::launch(f, config, ptrs);
  }, nb::arg("function"), nb::arg("grid"), nb::arg("block"), nb::arg("cluster"), nb::arg("smem"), nb::arg("stream"),
     nb::arg("params"), nb::arg("offsets"), nb::arg("cooperative") = false, nb::arg("pdl") = false,
     nb::arg("preferred_cluster") = std::vector<unsigned>{}, nb::arg("launch_completion_event") = 0,
     nb::arg("launch_completion_event_flags") = 0, nb::arg("programmatic_event") = 0,
     nb::arg("programmatic_event_flags") = 0, nb::arg("programmatic_event_trigger_at_block_start") = false);

  // A kernel with its launch shape fixed but the grid, stream and parameters given per call: the hot path of a
  // compiled function's call (launcher.hpp; the native fast call drives the same object without Python).
  nb::class_<ww::py::Launcher>(m, "Launcher")
      .def("__init__", [](ww::py::Launcher* self, const rt::Function& f, const std::vector<unsigned>& block,
                          const std::vector<unsigned>& cluster, size_t smem, const std::vector<size_t>& offsets) {
        if (offsets.size() > 256) throw std::invalid_argument("Launcher: more than 256 kernel parameters");
        rt::LaunchConfig config{rt::Dim3(1, 1, 1), dim3(block, "block"),
                                cluster.empty() ? rt::Dim3(0, 0, 0) : dim3(cluster, "cluster"), smem, rt::StreamRef(),
                                false, false, rt::Dim3(0, 0, 0)};
        new (self) ww::py::Launcher{rt::PreparedLaunch(f, config), offsets};
      })
      .def("__call__", [](ww::py::Launcher& l, unsigned gx, unsigned gy, unsigned gz, uintptr_t stream,
                          nb::bytes params) {
        l.launch(rt::Dim3(gx, gy, gz), stream, const_cast<char*>(params.c_str()), params.size());
      });

  nb::class_<rt::DeviceBuffer>(m, "DeviceBuffer", "Device memory (cuMemAlloc), freed with the object.")
      .def(nb::init<size_t>())
      .def_prop_ro("ptr", [](const rt::DeviceBuffer& b) { return static_cast<uint64_t>(b.ptr()); })
      .def_prop_ro("size", &rt::DeviceBuffer::size)
      .def("copy_from_host", [](rt::DeviceBuffer& b, nb::bytes data) {
        if (data.size() > b.size()) throw std::invalid_argument("copy_from_host: more bytes than the buffer holds");
        rt::memcpy_htod(b.ptr(), data.c_str(), data.size());
      })
      .def("copy_to_host", [](const rt::DeviceBuffer& b) {
        std::string out(b.size(), '\0');
        rt::memcpy_dtoh(out.data(), b.ptr(), b.size());
        return nb::bytes(out.data(), out.size());
      });
}
