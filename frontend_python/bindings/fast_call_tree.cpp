// A list or tuple argument of a compiled function read by the native fast path (ArgKind::Tree): the Python numbers
// of a tuple are runtime values (call/arg_tensor.py's TreeArg, a problem shape `((m, n), alpha)`), each read as an
// argument of its own kind, at any depth, and compile-time values compared. It takes what the generated Python fast
// path (TreeArg.fast_lines) reads the same way, and leaves anything else (another length, a list whose len() or
// indexing is its own, a number the element's kind refuses, a compile-time value it cannot compare) to the Python
// call, which recompiles or raises as it does.
#include "fast_call.hpp"

namespace ww::py::fast_call {
namespace {

constexpr int kMaxConstDepth = 8;  // nesting of a compiled-in tuple compared by value

bool equal_values(PyObject* x, PyObject* y, int depth) {
  if (x == y) return true;
  PyTypeObject* t = Py_TYPE(x);
  if (t != Py_TYPE(y)) return false;  // const_key compares the type's name too; other types: the Python call
  if (t == &PyFloat_Type) return PyFloat_AS_DOUBLE(x) == PyFloat_AS_DOUBLE(y);  // NaN: never, as == says
  if (t == &PyLong_Type || t == &PyUnicode_Type) {  // C comparisons: no Python code runs
    int r = PyObject_RichCompareBool(x, y, Py_EQ);
    if (r < 0) PyErr_Clear();
    return r == 1;
  }
  if (t != &PyTuple_Type || depth >= kMaxConstDepth || PyTuple_GET_SIZE(x) != PyTuple_GET_SIZE(y)) return false;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(x); ++k)
    if (!equal_values(PyTuple_GET_ITEM(x, k), PyTuple_GET_ITEM(y, k), depth + 1)) return false;
  return true;
}

// Whether `v` is read as TreeArg.fast_lines reads it (isinstance of list or tuple, len(v), v[k]) by its storage:
// a tuple or a list, or a subclass of one (a NamedTuple) with their len() and indexing. `is_list`: it may change.
bool tree_type(PyObject* v, bool& is_list) {
  PyTypeObject* t = Py_TYPE(v);
  if (t == &PyTuple_Type || t == &PyList_Type) {
    is_list = t == &PyList_Type;
    return true;
  }
  PyTypeObject* base = PyTuple_Check(v) ? &PyTuple_Type : PyList_Check(v) ? &PyList_Type : nullptr;
  if (!base || !t->tp_as_sequence || !t->tp_as_mapping) return false;
  is_list = base == &PyList_Type;
  return t->tp_as_sequence->sq_length == base->tp_as_sequence->sq_length &&
         t->tp_as_mapping->mp_length == base->tp_as_mapping->mp_length &&
         t->tp_as_mapping->mp_subscript == base->tp_as_mapping->mp_subscript;
}

}  // namespace

bool same_const(PyObject* compiled, PyObject* given) { return equal_values(compiled, given, 0); }

bool FastCall::read_tree(const ArgPlan& p, PyObject* v, Values& out, bool hold) {
  bool is_list = false;
  if (!tree_type(v, is_list)) return false;
  hold = hold || is_list;
  const Py_ssize_t n = static_cast<Py_ssize_t>(p.children.size());
  for (Py_ssize_t k = 0; k < n; ++k) {
    // Again at each element: reading a Numeric's number may run Python code, which may change a list.
    if (Py_SIZE(v) != n) return false;
    PyObject* x = is_list ? PyList_GET_ITEM(v, k) : PyTuple_GET_ITEM(v, k);
    if (is_list) Py_INCREF(x);  // kept while it is read, whatever that code does to the list
    const ArgPlan& c = p.children[k];
    bool ok = false;
    switch (c.kind) {
      case ArgKind::Int:
        ok = read_int(c, x, out);
        break;
      case ArgKind::Scalar: {
        PyObject* s = number(x, out);  // a Numeric's number is held already
        if (s && s == x && hold) {     // packed after the whole call is read: held until then
          if (out.nowned < kMaxOwned) {
            out.owned[out.nowned++] = Py_NewRef(x);
          } else {
            s = nullptr;
          }
        }
        out.objs[c.slot] = s;
        ok = s != nullptr;
        break;
      }
      case ArgKind::Const:
        ok = x == c.object || (c.object && same_const(c.object, x));
        break;
      case ArgKind::Tree:
        ok = read_tree(c, x, out, hold);
        break;
      default:
        break;
    }
    if (is_list) Py_DECREF(x);
    if (!ok) return false;
  }
  return Py_SIZE(v) == n;  // (an empty one, or a list that grew while its last element was read)
}

}  // namespace ww::py::fast_call
