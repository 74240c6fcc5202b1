// Reading the Python values of a call for the native fast path (fast_call.hpp): integers, torch tensor types
// and their DLPack exchange tables, streams; evaluating grid programs and packing kernel parameters.
#include "fast_call.hpp"

#include <initializer_list>

namespace ww::py::fast_call {

PyObject* intern(const char* s) {
  PyObject* o = PyUnicode_InternFromString(s);
  if (!o) throw nb::python_error();
  return o;
}

bool read_i64(PyObject* o, int64_t& out) {
  if (!PyLong_Check(o)) return false;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  out = v;
  return true;
}

bool read_u64(PyObject* o, uint64_t& out) {
  if (!PyLong_Check(o)) return false;
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(o, &overflow);  // the quick way for what fits 63 bits
  if (!overflow) {
    if (s == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    if (s < 0) return false;
    out = static_cast<uint64_t>(s);
    return true;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  out = v;
  return true;
}

// The stride part of a specialisation key: -1 for a unit stride, else its lowest set bit (0 for 0).
int64_t stride_key(int64_t x) {
  if (x == 1) return -1;
  uint64_t u = static_cast<uint64_t>(x);
  return static_cast<int64_t>(u & (~u + 1));
}

bool eval(const Expr& e, const int64_t* syms, int64_t& out) {
  const Ins* c = e.ins.data();
  const size_t len = e.ins.size();
  if (len == 1 && (c->op == Op::Const || c->op == Op::Sym)) {  // most extents and many host values
    out = c->op == Op::Const ? c->x : syms[c->x];
    return true;
  }
  int64_t st[kMaxExprStack];
  int n = 0;
  for (size_t k = 0; k < len; ++k) {
    const Op op = c[k].op;
    const int64_t v = c[k].x;
    if (c[k].rhs) {
      if (!int_binary(op, st[n - 1], c[k].rhs == 1 ? v : syms[v], st[n - 1])) return false;
      continue;
    }
    switch (op) {
      case Op::Const: st[n++] = v; continue;
      case Op::Sym: st[n++] = syms[v]; continue;
      case Op::Neg:
      case Op::Abs:
        if (st[n - 1] == INT64_MIN) return false;
        st[n - 1] = (op == Op::Neg || st[n - 1] < 0) ? -st[n - 1] : st[n - 1];
        continue;
      case Op::Not: st[n - 1] = st[n - 1] == 0; continue;
      case Op::Ctlz:
      case Op::Cttz:
      case Op::Popc: st[n - 1] = bit_count(op, st[n - 1], v); continue;
      case Op::Cast: {
        int bits = static_cast<int>(v & 255);
        bool is_signed = (v & 256) != 0;
        if (bits == 0) {
          st[n - 1] = st[n - 1] != 0;
        } else if (bits < 64) {
          uint64_t mask = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(st[n - 1]) & mask;
          if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
          st[n - 1] = static_cast<int64_t>(u);
        } else if (!is_signed && st[n - 1] < 0) {
          return false;  // a Uint64 beyond 63 bits: the Python call
        }
        continue;
      }
      case Op::Select: {
        int64_t f = st[--n], t = st[--n];
        st[n - 1] = st[n - 1] != 0 ? t : f;
        continue;
      }
      default: {
        int64_t b = st[--n];
        if (!int_binary(op, st[n - 1], b, st[n - 1])) return false;
      }
    }
  }
  out = st[0];
  return true;
}

// Writes v as struct format `fmt` (native byte order, standard sizes) where it fits the field.
bool pack_int(char fmt, int64_t v, char* d) {
  switch (fmt) {
    case 'b': if (v < INT8_MIN || v > INT8_MAX) return false; { int8_t x = v; std::memcpy(d, &x, 1); } return true;
    case 'B': if (v < 0 || v > UINT8_MAX) return false; { uint8_t x = v; std::memcpy(d, &x, 1); } return true;
    // a Boolean parameter: 0 or 1, as struct.pack('?', v) writes it (the kernel reads the byte's low bit)
    case '?': { uint8_t x = v != 0; std::memcpy(d, &x, 1); } return true;
    case 'h': if (v < INT16_MIN || v > INT16_MAX) return false; { int16_t x = v; std::memcpy(d, &x, 2); } return true;
    case 'H': if (v < 0 || v > UINT16_MAX) return false; { uint16_t x = v; std::memcpy(d, &x, 2); } return true;
    case 'i': if (v < INT32_MIN || v > INT32_MAX) return false; { int32_t x = v; std::memcpy(d, &x, 4); } return true;
    case 'I': if (v < 0 || v > UINT32_MAX) return false; { uint32_t x = v; std::memcpy(d, &x, 4); } return true;
    case 'q': std::memcpy(d, &v, 8); return true;
    case 'Q': if (v < 0) return false; std::memcpy(d, &v, 8); return true;
    default: return false;
  }
}

bool pack_u64(char fmt, uint64_t v, char* d) {
  if (fmt == 'Q') {
    std::memcpy(d, &v, 8);
    return true;
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  return pack_int(fmt, static_cast<int64_t>(v), d);
}

// A scalar argument as the Python call packs it: int(x) for the integer formats, x for the float ones. Only
// ints, bools and floats are taken here (a Numeric goes the Python way).
bool pack_double(char fmt, double x, char* d) {
  int r = fmt == 'e' ? PyFloat_Pack2(x, d, PY_LITTLE_ENDIAN)
          : fmt == 'f' ? PyFloat_Pack4(x, d, PY_LITTLE_ENDIAN)
          : fmt == 'd' ? PyFloat_Pack8(x, d, PY_LITTLE_ENDIAN) : -2;
  if (r == -1) PyErr_Clear();
  return r == 0;
}

bool pack_scalar(char fmt, PyObject* o, char* d) {
  if (fmt == 'e' || fmt == 'f' || fmt == 'd') {
    double x;
    if (PyFloat_CheckExact(o)) {
      x = PyFloat_AS_DOUBLE(o);
    } else if (PyLong_CheckExact(o) || PyBool_Check(o)) {
      x = PyLong_AsDouble(o);
      if (x == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
    } else {
      return false;
    }
    int r = fmt == 'e' ? PyFloat_Pack2(x, d, PY_LITTLE_ENDIAN) : fmt == 'f' ? PyFloat_Pack4(x, d, PY_LITTLE_ENDIAN)
                                                                             : PyFloat_Pack8(x, d, PY_LITTLE_ENDIAN);
    if (r != 0) {
      PyErr_Clear();
      return false;
    }
    return true;
  }
  if (fmt == '?') {  // a Boolean parameter: the value's truth, as struct.pack('?', x) takes it (2 and 0.5 are true)
    if (!PyLong_CheckExact(o) && !PyBool_Check(o) && !PyFloat_CheckExact(o)) return false;
    int t = PyObject_IsTrue(o);
    if (t < 0) {
      PyErr_Clear();
      return false;
    }
    d[0] = static_cast<char>(t);
    return true;
  }
  if (!PyLong_CheckExact(o) && !PyBool_Check(o)) return false;
  int64_t v;
  return read_i64(o, v) && pack_int(fmt, v, d);
}

int fmt_size(char fmt) {
  switch (fmt) {
    case 'b': case 'B': case '?': return 1;
    case 'h': case 'H': case 'e': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'q': case 'Q': case 'd': return 8;
    default: return 0;
  }
}

std::string type_attr(PyTypeObject* tp, PyObject* name) {
  PyObject* v = PyObject_GetAttr(reinterpret_cast<PyObject*>(tp), name);
  if (!v) {
    PyErr_Clear();
    return {};
  }
  std::string s;
  if (PyUnicode_Check(v)) {
    const char* c = PyUnicode_AsUTF8(v);
    if (c) s = c; else PyErr_Clear();
  }
  Py_DECREF(v);
  return s;
}

// The torch.Tensor type of `tp` (what the Python call tests: type name 'Tensor' in module 'torch'), or null.
TorchType* torch_type(PyTypeObject* tp) {
  for (int i = 0; i < g_ntorch_types; ++i)
    if (g_torch_types[i].type == reinterpret_cast<PyObject*>(tp)) return &g_torch_types[i];
  for (PyObject* t : g_not_torch)
    if (t == reinterpret_cast<PyObject*>(tp)) return nullptr;
  PyObject* o = reinterpret_cast<PyObject*>(tp);
  if (g_ntorch_types == 8) return nullptr;
  Py_INCREF(o);
  if (type_attr(tp, g_names.name) != "Tensor" || type_attr(tp, g_names.module) != "torch") {
    if (g_not_torch.size() < 64) g_not_torch.push_back(o); else Py_DECREF(o);
    return nullptr;
  }
  const ww::py::dlpack::ExchangeApi* api = nullptr;
  PyObject* cap = PyObject_GetAttrString(o, "__dlpack_c_exchange_api__");
  if (!cap) {
    PyErr_Clear();
    cap = PyObject_GetAttrString(o, "__c_dlpack_exchange_api__");
  }
  if (!cap) PyErr_Clear();
  if (cap && PyCapsule_IsValid(cap, ww::py::dlpack::kCapsuleName)) {
    api = static_cast<const ww::py::dlpack::ExchangeApi*>(PyCapsule_GetPointer(cap, ww::py::dlpack::kCapsuleName));
    if (!api) PyErr_Clear();
    if (api && (api->header.version.major != ww::py::dlpack::kMajorVersion || !api->dltensor_from_py_object_no_sync))
      api = nullptr;
  }
  Py_XDECREF(cap);  // the table lives as long as the framework (DLPack's rule); the type is kept alive here
  g_torch_types[g_ntorch_types] = {o, api, true};
  return &g_torch_types[g_ntorch_types++];
}

// Whether objects of type tp are read by int() of them (kept per type in `table`): a type that cannot change
// (static or immutable), with the generic getattr and no instance dict, none of `attrs` and an int conversion.
static bool read_by_int(StreamType* table, int& n, PyTypeObject* tp, std::initializer_list<PyObject*> attrs) {
  for (int i = 0; i < n; ++i)
    if (table[i].type == reinterpret_cast<PyObject*>(tp)) return table[i].by_int;
  bool fixed = !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IMMUTABLETYPE);
  bool by_int = fixed && tp->tp_getattro == PyObject_GenericGetAttr && tp->tp_dictoffset == 0 &&
                tp->tp_as_number && (tp->tp_as_number->nb_int || tp->tp_as_number->nb_index);
  for (PyObject* a : attrs) by_int = by_int && !_PyType_Lookup(tp, a);
  if (n < 16) {
    Py_INCREF(reinterpret_cast<PyObject*>(tp));
    table[n++] = {reinterpret_cast<PyObject*>(tp), by_int};
  }
  return by_int;
}

bool stream_by_int(PyTypeObject* tp) {
  return read_by_int(g_stream_types, g_nstream_types, tp, {g_cuda_stream_name, g_ptr_name, g_handle_name});
}

bool event_by_int(PyTypeObject* tp) {
  return read_by_int(g_event_types, g_nevent_types, tp, {g_cuda_event_name});
}


// The attribute form of a torch tensor: stride(), data_ptr(), dtype, shape, as the Python call reads them;
// `dtype` a new reference on success.
bool torch_attributes(PyObject* v, int rank, int64_t* shape, int64_t* strides, uint64_t& ptr, PyObject*& dtype) {
  bool ok = false;
  PyObject* st = PyObject_CallMethodNoArgs(v, g_names.stride);
  PyObject* p = st ? PyObject_CallMethodNoArgs(v, g_names.data_ptr) : nullptr;
  PyObject* dt = p ? PyObject_GetAttr(v, g_names.dtype) : nullptr;
  PyObject* sh = dt ? PyObject_GetAttr(v, g_names.shape) : nullptr;
  if (sh && PyTuple_Check(st) && PyTuple_Check(sh) && PyTuple_GET_SIZE(st) == rank && PyTuple_GET_SIZE(sh) == rank &&
      read_u64(p, ptr)) {
    ok = true;
    for (int k = 0; k < rank && ok; ++k)
      ok = read_i64(PyTuple_GET_ITEM(st, k), strides[k]) && read_i64(PyTuple_GET_ITEM(sh, k), shape[k]);
    if (ok) dtype = Py_NewRef(dt);
  }
  if (!sh) PyErr_Clear();
  Py_XDECREF(st);
  Py_XDECREF(p);
  Py_XDECREF(dt);
  Py_XDECREF(sh);
  return ok;
}

}  // namespace ww::py::fast_call
