#pragma once
// Conversions between Python objects and the layout algebra's values, shared by the binding files.
#include <nanobind/nanobind.h>

#include <string>

#include "ww/layout/layout_algebra.hpp"

namespace ww::py {

// A dynamic integer seen from Python.
struct SymInt {
  Int v;
};

// A stride that walks one mode of a tuple-valued codomain (CuTe's v@i@j).
struct ScaledBasis {
  Int value;
  Basis basis;
};

std::string py_type_name(nanobind::handle h);
Int to_int(nanobind::handle h, const char* what);
IntTuple to_int_tuple(nanobind::handle h, const char* what, int depth = 0);
nanobind::object from_int(const Int& v);
nanobind::object from_int_tuple(const IntTuple& t);

}  // namespace ww::py
