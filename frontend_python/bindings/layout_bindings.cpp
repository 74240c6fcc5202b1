// Bindings of the layout algebra. Shapes, strides and coordinates cross as Python ints and tuples; dynamic
// integers as SymInt; basis strides as ScaledBasis. The Python package (warpweave.cute) adds CuTe DSL's argument
// conventions on top.
#include <algorithm>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <set>
#include <memory>

#include "ww/layout/assumptions.hpp"
#include "ww/layout/coordinates.hpp"
#include "ww/layout/error.hpp"
#include "ww/layout/notation.hpp"
#include "layout_convert.hpp"

namespace nb = nanobind;
using namespace ww;

namespace ww::py {

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

Int to_int(nb::handle h, const char* what) {
  if (PyBool_Check(h.ptr())) throw LayoutTypeError(std::string(what) + ": expected an integer, got a bool");
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow) throw LayoutError(std::string(what) + ": integer out of the 64-bit range");
    return Int(v);
  }
  if (nb::isinstance<SymInt>(h)) return nb::cast<SymInt&>(h).v;
  // DSL values (e.g. Int32 proxies) and numpy integers say how they enter the algebra.
  if (nb::hasattr(h, "__ww_int__")) return to_int(h.attr("__ww_int__")(), what);
  if (nb::hasattr(h, "__index__")) return to_int(h.attr("__index__")(), what);
  throw LayoutTypeError(std::string(what) + ": expected an integer, got " + py_type_name(h));
}

IntTuple to_int_tuple(nb::handle h, const char* what, int depth) {
  if (depth > 64) throw LayoutError(std::string(what) + ": nesting deeper than 64 levels");
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    std::vector<IntTuple> c;
    for (nb::handle x : h) c.push_back(to_int_tuple(x, what, depth + 1));
    return IntTuple::tuple(std::move(c));
  }
  if (nb::isinstance<ScaledBasis>(h)) {
    auto& b = nb::cast<ScaledBasis&>(h);
    return IntTuple::scaled_basis(b.value, b.basis);
  }
  return IntTuple(to_int(h, what));
}

nb::object from_int(const Int& v) {
  if (auto s = v.static_value()) return nb::int_(*s);
  return nb::cast(SymInt{v});
}

nb::object from_int_tuple(const IntTuple& t) {
  if (t.is_leaf()) {
    if (t.has_basis()) return nb::cast(ScaledBasis{t.value(), t.basis()});
    return from_int(t.value());
  }
  nb::list l;
  for (auto& c : t.children()) l.append(from_int_tuple(c));
  return nb::tuple(l);
}

}  // namespace ww::py

namespace {
using namespace ww::py;

void collect_symbols(const Int& x, std::set<uint64_t>& out) {
  if (x.is_static()) return;
  for (auto& t : x.poly()->terms)
    for (auto& f : t.factors) {
      if (f->kind == sym::Atom::Kind::Symbol) {
        out.insert(f->id);
      } else {
        collect_symbols(f->a, out);
        collect_symbols(f->b, out);
      }
    }
}

void collect_symbols(const IntTuple& t, std::set<uint64_t>& out) {
  if (t.is_leaf()) {
    collect_symbols(t.value(), out);
    return;
  }
  for (auto& c : t.children()) collect_symbols(c, out);
}

// Python source evaluating a dynamic integer from variables named <prefix><symbol id>; Python's // and % floor,
// as the algebra does, so the expression means the same thing.
void python_expr(const Int& x, const std::string& prefix, std::string& out);

void python_atom(const sym::Atom& a, const std::string& prefix, std::string& out) {
  using K = sym::Atom::Kind;
  auto bin = [&](const char* op) {
    out += "(";
    python_expr(a.a, prefix, out);
    out += op;
    python_expr(a.b, prefix, out);
    out += ")";
  };
  switch (a.kind) {
    case K::Symbol: out += prefix + std::to_string(a.id); return;
    case K::Div: bin(" // "); return;
    case K::Mod: bin(" % "); return;
    case K::Xor: bin(" ^ "); return;
    case K::Min: out += "min"; bin(", "); return;
    case K::Max: out += "max"; bin(", "); return;
  }
}

void python_expr(const Int& x, const std::string& prefix, std::string& out) {
  if (auto v = x.static_value()) {
    out += "(" + std::to_string(*v) + ")";
    return;
  }
  const sym::Poly& p = *x.poly();
  out += "(";
  bool first = true;
  for (auto& t : p.terms) {
    if (!first) out += " + ";
    first = false;
    out += "(" + std::to_string(t.coef) + ")";
    for (auto& f : t.factors) {
      out += "*";
      python_atom(*f, prefix, out);
    }
  }
  if (p.constant) out += " + (" + std::to_string(p.constant) + ")";
  out += ")";
}

// The ids of the symbols a value depends on: what must be known to evaluate it.
std::vector<uint64_t> symbols_of(nb::handle h) {
  std::set<uint64_t> out;
  if (nb::isinstance<Layout>(h)) {
    auto& l = nb::cast<Layout&>(h);
    collect_symbols(l.shape(), out);
    collect_symbols(l.stride(), out);
  } else if (nb::isinstance<ComposedLayout>(h)) {
    auto& c = nb::cast<ComposedLayout&>(h);
    collect_symbols(c.outer().shape(), out);
    collect_symbols(c.outer().stride(), out);
    collect_symbols(c.offset(), out);
    if (!c.inner_is_swizzle()) {
      collect_symbols(std::get<Layout>(c.inner()).shape(), out);
      collect_symbols(std::get<Layout>(c.inner()).stride(), out);
    }
  } else {
    collect_symbols(to_int_tuple(h, "symbols_of"), out);
  }
  return {out.begin(), out.end()};
}

Tiler to_tiler(nb::handle h, int depth = 0) {
  if (depth > 64) throw LayoutError("tiler: nesting deeper than 64 levels");
  if (h.is_none()) return Tiler::underscore();
  if (nb::isinstance<Layout>(h)) return Tiler(nb::cast<Layout&>(h));
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    std::vector<Tiler> modes;
    for (nb::handle x : h) {
      // A tuple inside a tiler is a by-mode tiler again; a bare shape tuple of ints reads the same way.
      modes.push_back(to_tiler(x, depth + 1));
    }
    return Tiler::tuple(std::move(modes));
  }
  if (nb::isinstance<ComposedLayout>(h))
    throw LayoutTypeError("tiler: a composed (swizzled) layout cannot be a tiler");
  return Tiler(to_int(h, "tiler"));
}

// A mode index, rank or type width from Python: an int (or an object with __index__) in [lo, hi]. Anything else
// is a TypeError, anything out of range a ValueError naming the value (never a failed C++ cast).
int to_small_int(nb::handle h, const char* what, long long lo, long long hi) {
  if (PyBool_Check(h.ptr())) throw LayoutTypeError(std::string(what) + ": expected an integer, got a bool");
  nb::object idx;
  if (PyLong_Check(h.ptr())) {
    idx = nb::borrow(h);
  } else if (PyIndex_Check(h.ptr())) {
    idx = nb::steal(PyNumber_Index(h.ptr()));
    if (!idx.is_valid()) throw nb::python_error();
  } else {
    throw LayoutTypeError(std::string(what) + ": expected an integer, got " + py_type_name(h));
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  if (overflow || v < lo || v > hi)
    throw LayoutError(std::string(what) + ": " + nb::cast<std::string>(nb::str(idx)) + " is out of the range [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

constexpr long long kMaxIndex = 1 << 20;
constexpr long long kMaxRank = 1 << 12;  // ranks a layout may be padded to

// A mode path: an int or a sequence of ints. Negative or too large indices reach the algebra, which names the
// mode that is out of range.
std::vector<int> to_mode(nb::handle h) {
  std::vector<int> path;
  if (h.is_none()) return path;
  if (PyLong_Check(h.ptr()) || PyBool_Check(h.ptr())) return {to_small_int(h, "mode", -kMaxIndex, kMaxIndex)};
  if (!PyTuple_Check(h.ptr()) && !PyList_Check(h.ptr()))
    throw LayoutTypeError("mode: expected an int or a list of ints, got " + py_type_name(h));
  for (nb::handle x : h) path.push_back(to_small_int(x, "mode", -kMaxIndex, kMaxIndex));
  return path;
}

std::optional<IntTuple> opt_tuple(nb::handle h, const char* what) {
  if (h.is_none()) return std::nullopt;
  return to_int_tuple(h, what);
}

Layout make_layout_py(nb::handle shape, nb::handle stride) {
  IntTuple s = to_int_tuple(shape, "make_layout shape");
  if (stride.is_none()) return make_layout(s);
  return make_layout(s, to_int_tuple(stride, "make_layout stride"));
}

template <class T>
size_t hash_of(const T& x) {
  return x.hash();
}

}  // namespace

void bind_layout(nb::module_& m) {
  nb::class_<SymInt>(m, "SymInt", "A dynamic integer of the layout algebra (a runtime extent, stride or index).")
      .def_static("symbol", [](uint64_t id, int64_t divisibility, bool nonneg, int bits, const std::string& name) {
            return SymInt{Int::symbol(id, divisibility, nonneg, bits, name)};
          }, nb::arg("id"), nb::arg("divisibility") = 1, nb::arg("nonneg") = true, nb::arg("bits") = 32,
          nb::arg("name") = "")
      .def_prop_ro("divisibility", [](const SymInt& s) { return s.v.divisibility(); })
      .def_prop_ro("bits", [](const SymInt& s) { return s.v.bits(); })
      .def_prop_ro("expr", [](const SymInt& s) { return s.v.expr_str(); })
      .def("evaluate", [](const SymInt& s, const std::map<uint64_t, int64_t>& env) {
            return s.v.evaluate([&](uint64_t id) {
              auto it = env.find(id);
              if (it == env.end()) throw LayoutError("evaluate: no value for the symbol " + std::to_string(id));
              return it->second;
            });
          })
      .def("__ww_int__", [](const SymInt& s) { return s; })
      .def("__add__", [](const SymInt& a, nb::handle b) { return from_int(a.v + to_int(b, "+")); })
      .def("__radd__", [](const SymInt& a, nb::handle b) { return from_int(to_int(b, "+") + a.v); })
      .def("__sub__", [](const SymInt& a, nb::handle b) { return from_int(a.v - to_int(b, "-")); })
      .def("__rsub__", [](const SymInt& a, nb::handle b) { return from_int(to_int(b, "-") - a.v); })
      .def("__mul__", [](const SymInt& a, nb::handle b) { return from_int(a.v * to_int(b, "*")); })
      .def("__rmul__", [](const SymInt& a, nb::handle b) { return from_int(to_int(b, "*") * a.v); })
      .def("__floordiv__", [](const SymInt& a, nb::handle b) { return from_int(a.v / to_int(b, "//")); })
      .def("__rfloordiv__", [](const SymInt& a, nb::handle b) { return from_int(to_int(b, "//") / a.v); })
      .def("__mod__", [](const SymInt& a, nb::handle b) { return from_int(a.v % to_int(b, "%")); })
      .def("__rmod__", [](const SymInt& a, nb::handle b) { return from_int(to_int(b, "%") % a.v); })
      .def("__neg__", [](const SymInt& a) { return from_int(-a.v); })
      .def("same", [](const SymInt& a, nb::handle b) { return a.v.same(to_int(b, "same")); })
      .def("__hash__", [](const SymInt& a) { return a.v.hash(); })
      .def("__str__", [](const SymInt& a) { return a.v.str(); })
      .def("__repr__", [](const SymInt& a) { return "SymInt(" + a.v.expr_str() + ")"; });

  nb::class_<ScaledBasis>(m, "ScaledBasis", "A basis stride v@i@j: v steps along mode (i, j) of a coordinate.")
      .def("__init__", [](ScaledBasis* self, nb::handle value, nb::handle mode) {
            new (self) ScaledBasis{to_int(value, "ScaledBasis"), Basis::path(to_mode(mode))};
          })
      .def_prop_ro("value", [](const ScaledBasis& b) { return from_int(b.value); })
      .def_prop_ro("mode", [](const ScaledBasis& b) {
            std::vector<int> p;
            for (int i = 0; i < b.basis.depth(); ++i) p.push_back(b.basis[i]);
            return p;
          })
      .def("__eq__", [](const ScaledBasis& a, const ScaledBasis& b) { return a.basis == b.basis && a.value.same(b.value); })
      .def("__hash__", [](const ScaledBasis& b) { return b.value.hash() * 31 + b.basis.raw(); })
      // a basis stride scaled by an integer steps as far along the same mode (CuTe's E<i>{} * k)
      .def("__mul__", [](const ScaledBasis& b, nb::handle k) {
             return ScaledBasis{b.value * to_int(k, "ScaledBasis *"), b.basis};
           })
      .def("__rmul__", [](const ScaledBasis& b, nb::handle k) {
             return ScaledBasis{to_int(k, "* ScaledBasis") * b.value, b.basis};
           })
      .def("__repr__", [](const ScaledBasis& b) { return IntTuple::scaled_basis(b.value, b.basis).str(); });

  nb::class_<Layout>(m, "Layout", "A CuTe layout: a shape and a congruent stride.")
      .def("__init__", [](Layout* self, nb::handle shape, nb::handle stride) { new (self) Layout(make_layout_py(shape, stride)); },
           nb::arg("shape"), nb::arg("stride") = nb::none())
      .def_prop_ro("shape", [](const Layout& l) { return from_int_tuple(l.shape()); })
      .def_prop_ro("stride", [](const Layout& l) { return from_int_tuple(l.stride()); })
      .def("size", [](const Layout& l) { return from_int(l.size()); })
      .def("cosize", [](const Layout& l) { return from_int_tuple(l.cosize()); })
      .def_prop_ro("rank", &Layout::rank)
      .def_prop_ro("depth", &Layout::depth)
      .def("is_static", &Layout::is_static)
      // CuTe DSL: layout[i] is mode i (cute.get(layout, mode=[i])).
      .def("__getitem__", [](const Layout& l, nb::handle mode) { return get(l, to_mode(mode)); })
      // The largest run of elements known to be contiguous from every multiple of it: the divisibility of the first
      // mode's extent when that mode has stride 1, else 1 (what decides whether accesses along it can be widened).
      .def_prop_ro("max_alignment", [](const Layout& l) -> int64_t {
        auto shapes = flatten_leaves(l.shape());
        auto strides = flatten_leaves(l.stride());
        if (shapes.empty() || !strides[0].is_leaf() || !strides[0].value().is_constant(1)) return 1;
        return std::max<int64_t>(shapes[0].value().divisibility(), 1);
      })
      .def("__call__", [](const Layout& l, nb::handle coord) { return from_int_tuple(l(to_int_tuple(coord, "layout coordinate"))); })
      // Offset -> coordinate for compact layouts (CuTe's get_hier_coord / get_flat_coord / get_1d_coord). loc and ip:
      // CuTe DSL's source-location keywords, which its programs pass along (tracing records the user's line itself).
      .def("get_hier_coord", [](const Layout& l, nb::handle idx, nb::handle, nb::handle) { return from_int_tuple(get_hier_coord(l, to_int(idx, "get_hier_coord index"))); },
           nb::arg("idx"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("get_flat_coord", [](const Layout& l, nb::handle idx, nb::handle, nb::handle) { return from_int_tuple(get_flat_coord(l, to_int(idx, "get_flat_coord index"))); },
           nb::arg("idx"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("get_1d_coord", [](const Layout& l, nb::handle idx, nb::handle, nb::handle) { return from_int(get_1d_coord(l, to_int(idx, "get_1d_coord index"))); },
           nb::arg("idx"), nb::kw_only(), nb::arg("loc") = nb::none(), nb::arg("ip") = nb::none())
      .def("__eq__", [](const Layout& a, nb::handle b) { return nb::isinstance<Layout>(b) && a.same(nb::cast<Layout&>(b)); })
      .def("__ne__", [](const Layout& a, nb::handle b) { return !(nb::isinstance<Layout>(b) && a.same(nb::cast<Layout&>(b))); })
      .def("__hash__", &hash_of<Layout>)
      .def("__str__", &Layout::str)
      .def("__repr__", &Layout::str);

  nb::class_<Swizzle>(m, "Swizzle", "Swizzle<B,M,S>: XORs B bits at position M+S into the B bits at M.")
      .def("__init__", [](Swizzle* self, nb::handle b, nb::handle m, nb::handle sh) {
            new (self) Swizzle(to_small_int(b, "make_swizzle bits", -1024, 1024),
                               to_small_int(m, "make_swizzle base", -1024, 1024),
                               to_small_int(sh, "make_swizzle shift", -1024, 1024));
          }, nb::arg("bits"), nb::arg("base"), nb::arg("shift"))
      .def_prop_ro("num_bits", &Swizzle::bits)
      .def_prop_ro("num_base", &Swizzle::base)
      .def_prop_ro("num_shift", &Swizzle::shift)
      .def("__call__", [](const Swizzle& s, nb::handle offset) { return from_int(s(to_int(offset, "swizzle offset"))); })
      .def("__eq__", [](const Swizzle& a, nb::handle b) { return nb::isinstance<Swizzle>(b) && a.same(nb::cast<Swizzle&>(b)); })
      .def("__hash__", &hash_of<Swizzle>)
      .def("__str__", &Swizzle::str)
      .def("__repr__", &Swizzle::str);

  nb::class_<ComposedLayout>(m, "ComposedLayout", "inner o offset o outer: f(c) = inner(offset + outer(c)).")
      .def("__init__", [](ComposedLayout* self, nb::handle inner, nb::handle offset, const Layout& outer) {
            IntTuple off = to_int_tuple(offset, "make_composed_layout offset");
            if (nb::isinstance<Swizzle>(inner)) {
              new (self) ComposedLayout(nb::cast<Swizzle&>(inner), off, outer);
            } else if (nb::isinstance<Layout>(inner)) {
              new (self) ComposedLayout(nb::cast<Layout&>(inner), off, outer);
            } else {
              throw LayoutTypeError("make_composed_layout: the inner function must be a Swizzle or a Layout, got " + py_type_name(inner));
            }
          })
      .def_prop_ro("inner", [](const ComposedLayout& c) -> nb::object {
            if (c.inner_is_swizzle()) return nb::cast(std::get<Swizzle>(c.inner()));
            return nb::cast(std::get<Layout>(c.inner()));
          })
      .def_prop_ro("offset", [](const ComposedLayout& c) { return from_int_tuple(c.offset()); })
      .def_prop_ro("outer", &ComposedLayout::outer)
      .def_prop_ro("shape", [](const ComposedLayout& c) { return from_int_tuple(c.shape()); })
      .def("size", [](const ComposedLayout& c) { return from_int(c.size()); })
      .def("cosize", [](const ComposedLayout& c) { return from_int_tuple(c.cosize()); })
      .def_prop_ro("rank", &ComposedLayout::rank)
      .def_prop_ro("depth", [](const ComposedLayout& c) { return c.outer().depth(); })
      .def("__call__", [](const ComposedLayout& c, nb::handle coord) { return from_int_tuple(c(to_int_tuple(coord, "layout coordinate"))); })
      .def("__eq__", [](const ComposedLayout& a, nb::handle b) {
            return nb::isinstance<ComposedLayout>(b) && a.same(nb::cast<ComposedLayout&>(b));
          })
      .def("__hash__", &hash_of<ComposedLayout>)
      .def("__str__", &ComposedLayout::str)
      .def("__repr__", &ComposedLayout::str);

  // --- IntTuple functions ---------------------------------------------------------------------------------------
  m.def("product", [](nb::handle t) { return from_int(product(to_int_tuple(t, "product"))); });
  m.def("product_each", [](nb::handle t) { return from_int_tuple(product_each(to_int_tuple(t, "product_each"))); });
  m.def("tuple_flatten", [](nb::handle t) { return from_int_tuple(flatten(to_int_tuple(t, "flatten"))); });
  m.def("tuple_depth", [](nb::handle t) { return depth(to_int_tuple(t, "depth")); });
  m.def("tuple_rank", [](nb::handle t) { return to_int_tuple(t, "rank").rank(); });
  m.def("shape_div", [](nb::handle a, nb::handle b) {
    return from_int_tuple(shape_div(to_int_tuple(a, "shape_div"), to_int_tuple(b, "shape_div")));
  });
  m.def("tuple_ceil_div", [](nb::handle a, nb::handle b) {
    return from_int_tuple(ceil_div(to_int_tuple(a, "ceil_div"), to_int_tuple(b, "ceil_div")));
  });
  m.def("ceil_div", [](nb::handle target, nb::handle tiler) {
    return from_int_tuple(ceil_div(to_int_tuple(target, "ceil_div"), to_tiler(tiler)));
  });
  m.def("congruent", [](nb::handle a, nb::handle b) { return congruent(to_int_tuple(a, "congruent"), to_int_tuple(b, "congruent")); });
  m.def("compatible", [](nb::handle a, nb::handle b) { return compatible(to_int_tuple(a, "compatible"), to_int_tuple(b, "compatible")); });
  m.def("weakly_congruent", [](nb::handle a, nb::handle b) {
    return weakly_congruent(to_int_tuple(a, "weakly_congruent"), to_int_tuple(b, "weakly_congruent"));
  });
  m.def("idx2crd", [](nb::handle idx, nb::handle shape) {
    return from_int_tuple(idx2crd(to_int_tuple(idx, "idx2crd index"), to_int_tuple(shape, "idx2crd shape")));
  });
  m.def("crd2idx", [](nb::handle coord, const Layout& l) { return from_int_tuple(l(to_int_tuple(coord, "crd2idx coordinate"))); });
  m.def("crd2idx", [](nb::handle coord, const ComposedLayout& l) { return from_int_tuple(l(to_int_tuple(coord, "crd2idx coordinate"))); });
  m.def("crd2idx_shape", [](nb::handle coord, nb::handle shape, nb::handle stride) {
    return from_int_tuple(crd2idx(to_int_tuple(coord, "crd2idx"), to_int_tuple(shape, "crd2idx"), to_int_tuple(stride, "crd2idx")));
  });
  m.def("compact_col_major", [](nb::handle shape) { return from_int_tuple(compact_col_major(to_int_tuple(shape, "compact_col_major"))); });
  m.def("compact_row_major", [](nb::handle shape) { return from_int_tuple(compact_row_major(to_int_tuple(shape, "compact_row_major"))); });

  // --- Construction and modes -----------------------------------------------------------------------------------
  m.def("make_layout", &make_layout_py, nb::arg("shape"), nb::arg("stride") = nb::none());
  m.def("make_layout_from_modes", [](const std::vector<Layout>& modes) { return make_layout(modes); });
  m.def("make_ordered_layout", [](nb::handle shape, nb::handle order) {
    return make_ordered_layout(to_int_tuple(shape, "make_ordered_layout shape"), to_int_tuple(order, "make_ordered_layout order"));
  });
  m.def("make_identity_layout", [](nb::handle shape) { return make_identity_layout(to_int_tuple(shape, "make_identity_layout")); });
  m.def("make_layout_tv", [](const Layout& thr, const Layout& val) {
    auto [tiler, tv] = make_layout_tv(thr, val);
    return nb::make_tuple(from_int_tuple(tiler), tv);
  });
  m.def("get", [](const Layout& l, nb::handle mode) { return get(l, to_mode(mode)); });
  m.def("select", [](const Layout& l, nb::handle mode) { return select(l, to_mode(mode)); });
  m.def("flatten", [](const Layout& l) { return flatten(l); });
  m.def("flatten", [](const ComposedLayout& l) { return flatten(l); });
  m.def("group_modes", [](const Layout& l, nb::handle b, nb::handle e) {
    return group_modes(l, to_small_int(b, "group_modes begin", -kMaxIndex, kMaxIndex),
                       to_small_int(e, "group_modes end", -kMaxIndex, kMaxIndex));
  });
  m.def("append", [](const Layout& l, const Layout& x) { return append(l, x); });
  m.def("append_to_rank", [](const Layout& l, nb::handle n, const Layout& x) {
    return append(l, to_small_int(n, "append up_to_rank", 0, kMaxRank), x);
  });
  m.def("prepend", [](const Layout& l, const Layout& x) { return prepend(l, x); });
  m.def("prepend_to_rank", [](const Layout& l, nb::handle n, const Layout& x) {
    return prepend(l, to_small_int(n, "prepend up_to_rank", 0, kMaxRank), x);
  });

  // --- Algebra --------------------------------------------------------------------------------------------------
  m.def("coalesce", [](const Layout& l, nb::handle profile) {
    if (profile.is_none()) return coalesce(l);
    return coalesce(l, to_int_tuple(profile, "coalesce target_profile"));
  }, nb::arg("layout"), nb::arg("target_profile") = nb::none());
  m.def("coalesce", [](const ComposedLayout& l, nb::handle profile) {
    if (profile.is_none()) return coalesce(l);
    return coalesce(l, to_int_tuple(profile, "coalesce target_profile"));
  }, nb::arg("layout"), nb::arg("target_profile") = nb::none());
  m.def("filter_zeros", [](const Layout& l, nb::handle profile) {
    if (profile.is_none()) return filter_zeros(l);
    return filter_zeros(l, to_int_tuple(profile, "filter_zeros target_profile"));
  }, nb::arg("layout"), nb::arg("target_profile") = nb::none());
  m.def("filter", [](const Layout& l, nb::handle profile) {
    if (profile.is_none()) return filter(l);
    return filter(l, to_int_tuple(profile, "filter target_profile"));
  }, nb::arg("layout"), nb::arg("target_profile") = nb::none());
  m.def("composition", [](const Layout& a, nb::handle b) { return composition(a, to_tiler(b)); });
  m.def("composition", [](const ComposedLayout& a, nb::handle b) { return composition(a, to_tiler(b)); });
  m.def("composition", [](const Swizzle& a, const Layout& b) { return composition(a, b); });
  m.def("complement", [](const Layout& a, nb::handle cotarget) {
    if (cotarget.is_none()) return complement(a);
    return complement(a, to_int_tuple(cotarget, "complement cotarget"));
  }, nb::arg("layout"), nb::arg("cotarget") = nb::none());
  m.def("right_inverse", [](const Layout& a) { return right_inverse(a); });
  m.def("left_inverse", [](const Layout& a) { return left_inverse(a); });

#define WW_TILER_OP(name)                                                                              \
  m.def(#name, [](const Layout& a, nb::handle t) { return name(a, to_tiler(t)); });                  \
  m.def(#name, [](const ComposedLayout& a, nb::handle t) { return name(a, to_tiler(t)); });
  WW_TILER_OP(logical_divide)
  WW_TILER_OP(zipped_divide)
  WW_TILER_OP(tiled_divide)
  WW_TILER_OP(flat_divide)
  WW_TILER_OP(logical_product)
  WW_TILER_OP(zipped_product)
  WW_TILER_OP(tiled_product)
  WW_TILER_OP(flat_product)
#undef WW_TILER_OP
  m.def("blocked_product", [](const Layout& a, const Layout& b) { return blocked_product(a, b); });
  m.def("blocked_product", [](const ComposedLayout& a, const Layout& b) { return blocked_product(a, b); });
  m.def("raked_product", [](const Layout& a, const Layout& b) { return raked_product(a, b); });
  m.def("raked_product", [](const ComposedLayout& a, const Layout& b) { return raked_product(a, b); });
  m.def("tile_to_shape", [](const Layout& a, nb::handle shape, nb::handle order) {
    return tile_to_shape(a, to_int_tuple(shape, "tile_to_shape"), opt_tuple(order, "tile_to_shape order"));
  }, nb::arg("block"), nb::arg("target_shape"), nb::arg("order") = nb::none());
  m.def("tile_to_shape", [](const ComposedLayout& a, nb::handle shape, nb::handle order) {
    return tile_to_shape(a, to_int_tuple(shape, "tile_to_shape"), opt_tuple(order, "tile_to_shape order"));
  }, nb::arg("block"), nb::arg("target_shape"), nb::arg("order") = nb::none());
  m.def("max_common_layout", [](const Layout& a, const Layout& b) { return max_common_layout(a, b); });
  m.def("max_common_vector", [](const Layout& a, const Layout& b) { return from_int(max_common_vector(a, b)); });
  m.def("recast_layout", [](nb::handle new_bits, nb::handle old_bits, const Layout& l) {
    return recast_layout(to_small_int(new_bits, "recast_layout new_type_bits", -(1 << 20), 1 << 20),
                         to_small_int(old_bits, "recast_layout old_type_bits", -(1 << 20), 1 << 20), l);
  });
  m.def("upcast", [](const Layout& l, nb::handle n) { return upcast(l, to_int(n, "upcast").value("upcast factor")); });
  m.def("downcast", [](const Layout& l, nb::handle n) { return downcast(l, to_int(n, "downcast").value("downcast factor")); });

  // --- Assumptions about dynamic values (recorded while tracing, checked at launch) -----------------------------
  struct PyAssumptions {
    std::unique_ptr<AssumptionScope> scope;
    std::vector<Assumption> captured;
  };
  nb::class_<PyAssumptions>(m, "AssumptionScope",
                            "Records what the algebra assumes about dynamic values while open (a context manager).")
      .def(nb::init<>())
      .def("__enter__", [](PyAssumptions& a) -> PyAssumptions& {
            a.scope = std::make_unique<AssumptionScope>();
            return a;
          }, nb::rv_policy::reference)
      .def("__exit__", [](PyAssumptions& a, nb::args) {
            if (a.scope) a.captured = a.scope->assumptions();
            a.scope.reset();
            return false;
          })
      .def("__len__", [](const PyAssumptions& a) { return a.scope ? a.scope->assumptions().size() : a.captured.size(); })
      .def("descriptions", [](const PyAssumptions& a) {
            std::vector<std::string> out;
            for (auto& x : a.scope ? a.scope->assumptions() : a.captured) out.push_back(x.what + " (" + x.str() + ")");
            return out;
          })
      // Each assumption as (kind, a, b, c, d, description) with its operands as Python source over variables
      // s<symbol id> (python_expr): what a cached compilation stores to check them in a later process.
      .def("exported", [](const PyAssumptions& a) {
            nb::list out;
            for (auto& x : a.scope ? a.scope->assumptions() : a.captured) {
              std::string ea, eb, ec, ed;
              python_expr(x.a, "s", ea);
              python_expr(x.b, "s", eb);
              python_expr(x.c, "s", ec);
              python_expr(x.d, "s", ed);
              out.append(nb::make_tuple(static_cast<int>(x.kind), ea, eb, ec, ed, x.what + " (" + x.str() + ")"));
            }
            return out;
          })
      // The descriptions of the assumptions that fail for these symbol values (empty: all hold).
      .def("failed", [](const PyAssumptions& a, const std::map<uint64_t, int64_t>& env) {
            std::vector<std::string> out;
            auto val = [&](uint64_t id) {
              auto it = env.find(id);
              if (it == env.end()) throw LayoutError("no value for the symbol " + std::to_string(id));
              return it->second;
            };
            for (auto& x : a.scope ? a.scope->assumptions() : a.captured)
              if (!x.holds(val)) out.push_back(x.what + " (" + x.str() + ")");
            return out;
          });

  m.def("python_expr", [](nb::handle x, const std::string& prefix) {
    std::string out;
    python_expr(to_int(x, "python_expr"), prefix, out);
    return out;
  }, "Python source that evaluates an integer from variables named <prefix><symbol id>.");
  m.def("split_divisible", [](nb::handle x, int64_t m) {
    auto [d, r] = split_divisible(to_int(x, "split_divisible"), m);
    return nb::make_tuple(from_int(d), from_int(r));
  }, "(d, r) with x == d + r and d known to be a multiple of m (its terms that are).");
  m.def("symbols_of", &symbols_of, "The ids of the symbols a SymInt, shape or layout depends on.");
  m.def("evaluate", [](nb::handle x, const std::map<uint64_t, int64_t>& env) {
    IntTuple t = to_int_tuple(x, "evaluate");
    auto val = [&](uint64_t id) {
      auto it = env.find(id);
      if (it == env.end()) throw LayoutError("evaluate: no value for the symbol " + std::to_string(id));
      return it->second;
    };
    std::vector<IntTuple> leaves = flatten_leaves(wrap(t));
    for (auto& l : leaves) l = IntTuple(Int(l.value().evaluate(val)));
    return from_int_tuple(t.is_leaf() ? leaves[0] : unflatten(leaves, t));
  }, "Evaluates an int, SymInt or tuple of them with values for its symbols.");

  // --- Notation -------------------------------------------------------------------------------------------------
  m.def("parse_layout", [](const std::string& text) -> nb::object {
    auto any = parse_any_layout(text);
    if (auto* l = std::get_if<Layout>(&any)) return nb::cast(*l);
    return nb::cast(std::get<ComposedLayout>(any));
  });
  m.def("parse_int_tuple", [](const std::string& text) { return from_int_tuple(parse_int_tuple(text)); });
}
