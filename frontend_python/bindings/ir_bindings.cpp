// Bindings of the IR builder: values are Python ints, types MLIR type strings.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "layout_convert.hpp"
#include "ww/ir/builder.hpp"

namespace nb = nanobind;
using ww::ir::Builder;
using ww::ir::Value;

void bind_ir(nb::module_& m) {
  nb::exception<ww::ir::IRError>(m, "IRError", PyExc_ValueError);
  nb::class_<Builder>(m, "IRBuilder", "Writes MLIR text; what tracing produces.")
      .def(nb::init<>())
      .def("add_module_text", &Builder::add_module_text)
      .def("set_module_attribute", &Builder::set_module_attribute, nb::arg("name"), nb::arg("value"))
      .def("begin_function", &Builder::begin_function, nb::arg("name"), nb::arg("arg_types"),
           nb::arg("attributes") = "", nb::arg("arg_attributes") = std::vector<std::string>{})
      .def("add_function_argument", &Builder::add_function_argument, nb::arg("type"), nb::arg("attributes") = "")
      .def("end_function", &Builder::end_function)
      .def("in_function", &Builder::in_function)
      .def("op", [](Builder& b, const std::string& name, const std::vector<Value>& operands,
                    const std::vector<std::string>& result_types, const std::string& properties,
                    const std::string& attributes, int num_regions) {
             return b.op(name, operands, result_types, properties, attributes, num_regions);
           }, nb::arg("name"), nb::arg("operands"), nb::arg("result_types"), nb::arg("properties") = "",
           nb::arg("attributes") = "", nb::arg("num_regions") = 0)
      .def("op1", [](Builder& b, const std::string& name, const std::vector<Value>& operands,
                     const std::string& result_type, const std::string& properties, const std::string& attributes) {
             return b.op1(name, operands, result_type, properties, attributes);
           }, nb::arg("name"), nb::arg("operands"), nb::arg("result_type"), nb::arg("properties") = "",
           nb::arg("attributes") = "")
      .def("op0", [](Builder& b, const std::string& name, const std::vector<Value>& operands,
                     const std::string& properties, const std::string& attributes, int num_regions) {
             b.op0(name, operands, properties, attributes, num_regions);
           }, nb::arg("name"), nb::arg("operands"), nb::arg("properties") = "", nb::arg("attributes") = "",
           nb::arg("num_regions") = 0)
      .def("inline_asm", [](Builder& b, const std::string& text, const std::string& constraints,
                            const std::vector<Value>& operands, const std::vector<std::string>& result_types,
                            bool side_effects) { return b.inline_asm(text, constraints, operands, result_types, side_effects); },
           nb::arg("asm"), nb::arg("constraints"), nb::arg("operands"), nb::arg("result_types"),
           nb::arg("side_effects") = true)
      .def("custom_op", [](Builder& b, const std::string& format, const std::vector<Value>& operands,
                           const std::vector<std::string>& result_types) { return b.custom_op(format, operands, result_types); },
           nb::arg("format"), nb::arg("operands"), nb::arg("result_types"))
      .def("begin_region", [](Builder& b, const std::vector<std::string>& types) { return b.begin_region(types); })
      .def("end_region", &Builder::end_region)
      .def_prop_ro("region_depth", &Builder::region_depth)
      .def("set_emit_at_entry", &Builder::set_emit_at_entry)
      .def("type_of", &Builder::type_of)
      .def("set_location", [](Builder& b, const std::string& file, int line, int col) {
             b.set_location({file, line, col});
           })
      .def("constant_int", &Builder::constant_int)
      .def("constant_float", &Builder::constant_float)
      .def("bind_symbol", &Builder::bind_symbol)
      .def("has_symbol", &Builder::has_symbol)
      .def("materialize", [](Builder& b, nb::handle x, const std::string& type) {
             return b.materialize(ww::py::to_int(x, "materialize"), type);
           })
      .def("fresh_symbol_id", &Builder::fresh_symbol_id)
      .def_prop_ro("num_ops", &Builder::num_ops)
      .def("use_count", &Builder::use_count)
      .def("__str__", &Builder::str);
}
