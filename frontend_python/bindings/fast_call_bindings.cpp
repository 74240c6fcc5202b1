// The native fast path of a compiled function's call: one C++ call reads the arguments by a plan fixed when the
// fast path is built (warpweave/_dsl/call/native_call.py), evaluates the launch grids, packs the kernel parameters
// into a stack buffer at their offsets and launches. It accepts only what it can check as strictly as the Python
// fast path (compiled_function._build_fast_call) does; anything else (another type, an unseen specialisation key,
// a value out of its field's range, an empty grid, keywords, ...) goes to the Python call, which gives today's
// results and errors. No MLIR here: this file compiles in seconds.
//
// warpweave._core.FastCall   the plan and its reader/packer/launcher (packed() returns the launches instead)
// warpweave._core.CompiledFunctionBase
//     the C base of JitCompiledFunction: calling an instance runs its `_native` FastCall through the instance's
//     vectorcall slot, and type(self)._call(self, *args, **kwargs) (the Python call) for what it does not accept.
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlpack_exchange.hpp"
#include "launcher.hpp"
#include "ww/runtime/error.hpp"

namespace nb = nanobind;
namespace rt = ww::runtime;
using ww::py::Launcher;

namespace {

constexpr int kMaxArgs = 64;         // arguments of a function the native path takes
constexpr int kMaxSlots = 256;       // values read from the arguments (symbols, addresses, streams, scalars)
constexpr int kMaxRank = 16;         // tensor rank
constexpr int kMaxExprStack = 32;    // depth of a grid expression
constexpr size_t kMaxTorchKeys = 64; // accepted torch specialisation keys kept per argument
constexpr size_t kStackParams = 4096;

enum class ArgKind : uint8_t { Skip, Tensor, Int, Scalar, Stream, Const, Pointer };
enum class Source : uint8_t { Sym, Ptr, Scalar };
// Grid expressions in postfix form over symbol slots, with Python's integer semantics (floor // and %).
enum class Op : uint8_t { Const, Sym, Add, Sub, Mul, FloorDiv, Mod, Xor, Min, Max, Neg };

struct SymRead {
  bool stride;  // else the extent
  int mode;
  int slot;
};

// The specialisation keys (compiled_function._torch_key, or finer) of torch tensors that the Python call has
// accepted for one argument: dtype, address mod 16, then per mode -1 for a unit stride or its lowest set bit.
struct TorchKeys {
  int width = 0;
  std::vector<int64_t> flat;
  size_t last = 0;

  bool contains(const int64_t* key) {
    size_t n = flat.size() / width;
    if (last < n && std::memcmp(&flat[last * width], key, sizeof(int64_t) * width) == 0) return true;
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(&flat[i * width], key, sizeof(int64_t) * width) == 0) {
        last = i;
        return true;
      }
    }
    return false;
  }
  void insert(const int64_t* key) {
    if (contains(key) || flat.size() / width >= kMaxTorchKeys) return;
    flat.insert(flat.end(), key, key + width);
  }
};

// The values last read from a view for one argument. Valid while it is the same object with the same __dict__
// and no watched view __dict__ has changed since (g_view_epoch: a dict watcher counts every change, and the
// deallocation, of the dicts of cached views), so a view passed again costs three comparisons.
uint64_t g_view_epoch = 1;
int g_view_watcher = -1;

int view_dict_changed(PyDict_WatchEvent, PyObject*, PyObject*, PyObject*) {
  ++g_view_epoch;
  return 0;
}

struct ViewCache {
  PyObject* object = nullptr;  // identities only: no reference is held
  PyObject* dict = nullptr;
  uint64_t epoch = 0;
  uint64_t ptr = 0;
  std::vector<int64_t> syms;
};

struct ArgPlan {
  ArgKind kind = ArgKind::Skip;
  int slot = -1;               // Tensor: its address; Int: its symbol; Scalar: its object; Stream: its handle
  PyObject* object = nullptr;  // Tensor: the compiled specialisation; Const: the compiled value (null: none)
  int rank = 0;
  bool torch = false;          // Tensor: a torch tensor may be passed directly
  // Pointer: what a RuntimePointer must hold to match the compiled one (its type in `object`).
  PyObject* element_type = nullptr;
  PyObject* mem_space = nullptr;
  int64_t align = 0;
  std::vector<SymRead> reads;
  TorchKeys keys;
  ViewCache view;
};

struct Param {
  Source source;
  char fmt;  // struct format character
  int slot;
  uint32_t offset;
};

struct Expr {
  std::vector<std::pair<Op, int64_t>> code;
};

struct LaunchPlan {
  PyObject* target = nullptr;  // a Launcher, None (everything but the driver call) or a Python callable
  Launcher* native = nullptr;
  std::string kernel;
  Expr grid[3];
  int stream_slot = -1;  // -1: the constant `stream`
  uint64_t stream = 0;
  std::vector<Param> params;
  uint32_t size = 0;
};

// A torch tensor type seen in a call, with its DLPack exchange table when it offers one. `trusted` drops to
// false for good if a tensor's DLPack description ever differs from its data_ptr()/shape/stride().
struct TorchType {
  PyObject* type;
  const ww::py::dlpack::ExchangeApi* api;
  bool trusted;
};
TorchType g_torch_types[8];  // fixed places: a call keeps pointers to them
int g_ntorch_types = 0;
std::vector<PyObject*> g_not_torch;  // types seen that are not torch.Tensor (strong references)

PyObject* g_cuda_error = nullptr;  // warpweave._core.CudaError

struct Names {
  PyObject *element_type, *mem_space, *assumed_align, *address;
  PyObject *spec, *spec_method, *numeric_value, *data_ptr, *shape_, *strides_, *dtype, *stride, *shape, *cuda_stream, *name, *module;
};
Names g_names;

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
  int64_t st[kMaxExprStack];
  int n = 0;
  for (auto [op, v] : e.code) {
    if (op == Op::Const) {
      st[n++] = v;
      continue;
    }
    if (op == Op::Sym) {
      st[n++] = syms[v];
      continue;
    }
    if (op == Op::Neg) {
      if (st[n - 1] == INT64_MIN) return false;
      st[n - 1] = -st[n - 1];
      continue;
    }
    int64_t b = st[--n], a = st[n - 1], r;
    switch (op) {
      case Op::Add:
        if (__builtin_add_overflow(a, b, &r)) return false;
        break;
      case Op::Sub:
        if (__builtin_sub_overflow(a, b, &r)) return false;
        break;
      case Op::Mul:
        if (__builtin_mul_overflow(a, b, &r)) return false;
        break;
      case Op::FloorDiv:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;  // Python raises, or leaves 64 bits
        r = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --r;
        break;
      case Op::Mod:
        if (b == 0) return false;
        if (b == -1) {
          r = 0;
          break;
        }
        r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        break;
      case Op::Xor: r = a ^ b; break;
      case Op::Min: r = a < b ? a : b; break;
      case Op::Max: r = a > b ? a : b; break;
      default: return false;
    }
    st[n - 1] = r;
  }
  out = st[0];
  return true;
}

// Writes v as struct format `fmt` (native byte order, standard sizes) where it fits the field.
bool pack_int(char fmt, int64_t v, char* d) {
  switch (fmt) {
    case 'b': if (v < INT8_MIN || v > INT8_MAX) return false; { int8_t x = v; std::memcpy(d, &x, 1); } return true;
    case 'B': case '?': if (v < 0 || v > UINT8_MAX) return false; { uint8_t x = v; std::memcpy(d, &x, 1); } return true;
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

// Whether arg_plan._stream_handle reads a stream of this type as int(x): a type that cannot change (static or
// immutable), with the generic getattr and no instance dict, so that getattr(x, "cuda_stream" / "ptr" /
// "handle", None) is None for each of its objects, and that int() converts. Kept per type.
struct StreamType {
  PyObject* type;
  bool by_int;
};
StreamType g_stream_types[16];
int g_nstream_types = 0;
PyObject *g_cuda_stream_name, *g_ptr_name, *g_handle_name;

bool stream_by_int(PyTypeObject* tp) {
  for (int i = 0; i < g_nstream_types; ++i)
    if (g_stream_types[i].type == reinterpret_cast<PyObject*>(tp)) return g_stream_types[i].by_int;
  bool fixed = !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IMMUTABLETYPE);
  bool by_int = fixed && tp->tp_getattro == PyObject_GenericGetAttr && tp->tp_dictoffset == 0 &&
                tp->tp_as_number && (tp->tp_as_number->nb_int || tp->tp_as_number->nb_index) &&
                !_PyType_Lookup(tp, g_cuda_stream_name) && !_PyType_Lookup(tp, g_ptr_name) &&
                !_PyType_Lookup(tp, g_handle_name);
  if (g_nstream_types < 16) {
    Py_INCREF(reinterpret_cast<PyObject*>(tp));
    g_stream_types[g_nstream_types++] = {reinterpret_cast<PyObject*>(tp), by_int};
  }
  return by_int;
}

// A torch tensor's description read for one argument, kept when its key was not yet accepted.
struct TorchRead {
  PyObject* tensor;
  int arg;
  bool from_dlpack;
  PyObject* dtype;  // the attribute form: the dtype whose identity is key[0] (a reference held for the call)
  TorchType* type;
  int64_t key[2 + kMaxRank];
  int64_t shape[kMaxRank], strides[kMaxRank];
  uint64_t ptr;
};

enum class Outcome { Ready, Fallback };

struct Values {
  int64_t syms[kMaxSlots];
  uint64_t ptrs[kMaxSlots];
  PyObject* objs[kMaxSlots];
  TorchRead misses[4];
  int nmisses = 0;
  bool need_fallback = false;
  PyObject* owned[kMaxArgs];  // the numbers read out of Numeric arguments (references held for the call)
  int nowned = 0;

  Values() = default;
  Values(const Values&) = delete;
  ~Values() {
    for (int i = 0; i < nmisses; ++i) Py_XDECREF(misses[i].dtype);
    for (int i = 0; i < nowned; ++i) Py_DECREF(owned[i]);
  }
};

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

struct FastCall {
  std::vector<nb::object> refs;  // every Python object the plan points to
  std::vector<PyObject*> bound_self;
  int nargs = 0;
  std::vector<PyObject*> defaults;
  std::vector<PyObject*> constexprs;  // per argument: its compiled value when Constexpr, else null
  int nconstexprs = 0;
  std::vector<ArgPlan> args;
  std::vector<LaunchPlan> launches;
  PyObject* view_type = nullptr;
  PyObject* satisfies = nullptr;
  PyObject* numeric = nullptr;  // the DSL's Numeric base class
  uint64_t native_calls = 0, fallbacks = 0;
  bool cleared = false;

  PyObject* keep(nb::handle h) {
    refs.push_back(nb::borrow(h));
    return h.ptr();
  }

  // A RuntimeTensor's fields are plain instance attributes (runtime.py): read from its __dict__, which skips
  // the type lookups of getattr (the dict is made once per view).
  Outcome read_view(ArgPlan& p, PyObject* v, Values& out) {
    PyObject* d = PyObject_GenericGetDict(v, nullptr);
    if (!d) {
      PyErr_Clear();
      return Outcome::Fallback;
    }
    ViewCache& c = p.view;
    if (c.object == v && c.dict == d && c.epoch == g_view_epoch) {
      Py_DECREF(d);
      out.ptrs[p.slot] = c.ptr;
      for (size_t i = 0; i < p.reads.size(); ++i) out.syms[p.reads[i].slot] = c.syms[i];
      return Outcome::Ready;
    }
    Outcome o = read_view_fields(p, v, d, out);
    if (o == Outcome::Ready && g_view_watcher >= 0) {
      if (PyDict_Watch(g_view_watcher, d) == 0) {
        c.object = v;
        c.dict = d;
        c.epoch = g_view_epoch;  // after every change this read made (spec(), the spec's interning)
        c.ptr = out.ptrs[p.slot];
        c.syms.resize(p.reads.size());
        for (size_t i = 0; i < p.reads.size(); ++i) c.syms[i] = out.syms[p.reads[i].slot];
      } else {
        PyErr_Clear();
      }
    }
    Py_DECREF(d);
    return o;
  }

  Outcome read_view_fields(ArgPlan& p, PyObject* v, PyObject* d, Values& out) {
    PyObject* sp = PyDict_GetItemWithError(d, g_names.spec);  // borrowed, as the others
    if (!sp) {
      PyErr_Clear();
      return Outcome::Fallback;
    }
    if (sp != p.object) {
      // Not computed yet (a view made for this call): spec() computes and keeps it, as the Python call does.
      if (sp == Py_None) {
        sp = PyObject_CallMethodNoArgs(v, g_names.spec_method);
        if (!sp) {
          PyErr_Clear();
          return Outcome::Fallback;
        }
      } else {
        Py_INCREF(sp);
      }
      // An equal specialisation of another view, or one that satisfies the compiled one.
      int eq = PyObject_RichCompareBool(sp, p.object, Py_EQ);
      // An equal one is the compiled tuple from now on (the view's _spec caches its spec(); the compiled one
      // may come from the JIT cache): later calls with this view pass by identity.
      if (eq == 1 && PyObject_SetAttr(v, g_names.spec, p.object) != 0) PyErr_Clear();
      if (eq == 0) {
        PyObject* r = PyObject_CallFunctionObjArgs(satisfies, sp, p.object, nullptr);
        eq = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
      }
      Py_DECREF(sp);
      if (eq < 0) PyErr_Clear();
      if (eq != 1) return Outcome::Fallback;
    }
    PyObject* ptr = PyDict_GetItemWithError(d, g_names.data_ptr);
    // 0: a fake tensor (make_fake_tensor), or no memory: the Python call decides.
    if (!ptr || !read_u64(ptr, out.ptrs[p.slot]) || out.ptrs[p.slot] == 0) {
      PyErr_Clear();
      return Outcome::Fallback;
    }
    if (p.reads.empty()) return Outcome::Ready;
    PyObject* shape = PyDict_GetItemWithError(d, g_names.shape_);
    PyObject* strides = shape ? PyDict_GetItemWithError(d, g_names.strides_) : nullptr;
    if (!strides || !PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides)) {
      PyErr_Clear();
      return Outcome::Fallback;
    }
    for (const SymRead& r : p.reads) {
      PyObject* t = r.stride ? strides : shape;
      if (r.mode >= PyTuple_GET_SIZE(t) || !read_i64(PyTuple_GET_ITEM(t, r.mode), out.syms[r.slot]))
        return Outcome::Fallback;
    }
    return Outcome::Ready;
  }

  Outcome read_torch(int index, ArgPlan& p, TorchType& tt, PyObject* v, Values& out) {
    TorchRead r;
    r.tensor = v;
    r.arg = index;
    r.type = &tt;
    r.dtype = nullptr;
    int rank = p.rank;
    if (tt.api && tt.trusted) {
      ww::py::dlpack::Tensor dl;
      if (tt.api->dltensor_from_py_object_no_sync(v, &dl) != 0) {
        PyErr_Clear();
        return Outcome::Fallback;
      }
      if (dl.ndim != rank || (rank > 0 && (!dl.shape || !dl.strides))) return Outcome::Fallback;
      r.from_dlpack = true;
      r.ptr = reinterpret_cast<uint64_t>(dl.data) + dl.byte_offset;
      // Negative: never the address of a dtype object (the attribute form's key).
      r.key[0] = -1 - ((int64_t{dl.dtype.code} << 24) | (int64_t{dl.dtype.bits} << 16) | dl.dtype.lanes);
      std::memcpy(r.shape, dl.shape, sizeof(int64_t) * rank);
      std::memcpy(r.strides, dl.strides, sizeof(int64_t) * rank);
    } else {
      PyObject* dtype = nullptr;
      if (!torch_attributes(v, rank, r.shape, r.strides, r.ptr, dtype)) return Outcome::Fallback;
      r.from_dlpack = false;
      r.key[0] = reinterpret_cast<intptr_t>(dtype);
      r.dtype = dtype;
    }
    if (r.ptr == 0) {
      Py_XDECREF(r.dtype);
      return Outcome::Fallback;
    }
    r.key[1] = static_cast<int64_t>(r.ptr & 15);
    for (int k = 0; k < rank; ++k) r.key[2 + k] = stride_key(r.strides[k]);
    out.ptrs[p.slot] = r.ptr;
    for (const SymRead& s : p.reads) out.syms[s.slot] = s.stride ? r.strides[s.mode] : r.shape[s.mode];
    if (!p.keys.contains(r.key)) {  // the Python call checks it; the key is remembered if that call succeeds
      out.need_fallback = true;
      if (out.nmisses < 4) {
        out.misses[out.nmisses++] = r;
        return Outcome::Ready;
      }
    }
    Py_XDECREF(r.dtype);
    return Outcome::Ready;
  }

  // A number argument as the Python call reads it (`a.value if isinstance(a, Numeric) else a`): a Numeric's
  // static value is its _v when that is a Python int, bool or float (a dynamic one is never those); null for a
  // Numeric that is not static.
  PyObject* number(PyObject* v, Values& out) {
    if (PyLong_CheckExact(v) || PyBool_Check(v) || PyFloat_CheckExact(v) || !numeric ||
        !PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(numeric)))
      return v;
    PyObject* x = PyObject_GetAttr(v, g_names.numeric_value);
    if (!x) {
      PyErr_Clear();
      return nullptr;
    }
    out.owned[out.nowned++] = x;
    return PyLong_CheckExact(x) || PyBool_Check(x) || PyFloat_CheckExact(x) ? x : nullptr;
  }

  // A RuntimePointer (make_ptr) of the compiled element type, memory space and alignment, by identity of the
  // first two (the Python call compares its spec by value).
  static bool read_pointer(ArgPlan& p, PyObject* v, Values& out) {
    if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(p.object)) return false;
    PyObject* d = PyObject_GenericGetDict(v, nullptr);
    if (!d) {
      PyErr_Clear();
      return false;
    }
    // Its fields are plain instance attributes (runtime.py), read from its __dict__.
    PyObject* et = PyDict_GetItemWithError(d, g_names.element_type);
    PyObject* ms = et ? PyDict_GetItemWithError(d, g_names.mem_space) : nullptr;
    PyObject* al = ms ? PyDict_GetItemWithError(d, g_names.assumed_align) : nullptr;
    PyObject* ad = al ? PyDict_GetItemWithError(d, g_names.address) : nullptr;
    int64_t align = 0;
    bool ok = ad && et == p.element_type && ms == p.mem_space && PyLong_CheckExact(al) && read_i64(al, align) &&
              align == p.align && PyLong_CheckExact(ad) && read_u64(ad, out.ptrs[p.slot]);
    if (!ok) PyErr_Clear();
    Py_DECREF(d);
    return ok;
  }

  static bool read_stream(PyObject* v, uint64_t& out) {
    if (v == Py_None) {
      out = 0;
      return true;
    }
    if (PyLong_Check(v)) return !PyBool_Check(v) && read_u64(v, out);
    if (stream_by_int(Py_TYPE(v))) {  // cuda.bindings' CUstream: int() of it, as arg_plan._stream_handle ends
      PyObject* i = PyNumber_Long(v);
      bool ok = i && read_u64(i, out);
      if (!i) PyErr_Clear();
      Py_XDECREF(i);
      return ok;
    }
    PyObject* h = PyObject_GetAttr(v, g_names.cuda_stream);  // torch streams; the rest go the Python way
    if (!h) {
      PyErr_Clear();
      return false;
    }
    bool ok = PyLong_CheckExact(h) && read_u64(h, out);
    Py_DECREF(h);
    return ok;
  }

  // Reads every argument into `out`; Fallback when the Python call must take this call.
  Outcome read(PyObject* const* given, Py_ssize_t n, Values& out) {
    if (cleared) return Outcome::Fallback;
    PyObject* a[kMaxArgs];
    Py_ssize_t nb = static_cast<Py_ssize_t>(bound_self.size()), m = nb + n;
    bool omit = nconstexprs > 0 && m == nargs - nconstexprs;
    if (omit) {
      Py_ssize_t j = 0;
      for (int i = 0; i < nargs; ++i) {
        if (constexprs[i]) {
          a[i] = constexprs[i];
        } else {
          a[i] = j < nb ? bound_self[j] : given[j - nb];
          ++j;
        }
      }
    } else {
      if (m > nargs || m < nargs - static_cast<Py_ssize_t>(defaults.size())) return Outcome::Fallback;
      for (Py_ssize_t i = 0; i < m; ++i) a[i] = i < nb ? bound_self[i] : given[i - nb];
      for (Py_ssize_t i = m; i < nargs; ++i) a[i] = defaults[i - (nargs - defaults.size())];
    }
    for (int i = 0; i < nargs; ++i) {
      ArgPlan& p = args[i];
      PyObject* v = a[i];
      switch (p.kind) {
        case ArgKind::Skip: break;
        case ArgKind::Tensor: {
          Outcome o;
          if (Py_TYPE(v) == reinterpret_cast<PyTypeObject*>(view_type)) {
            o = read_view(p, v, out);
          } else {
            TorchType* tt = p.torch ? torch_type(Py_TYPE(v)) : nullptr;
            o = tt ? read_torch(i, p, *tt, v, out) : Outcome::Fallback;
          }
          if (o == Outcome::Fallback) return o;
          break;
        }
        case ArgKind::Int:
          v = number(v, out);
          if (!v || !(PyLong_CheckExact(v) || PyBool_Check(v)) || !read_i64(v, out.syms[p.slot]))
            return Outcome::Fallback;
          break;
        case ArgKind::Scalar:
          v = number(v, out);
          if (!v) return Outcome::Fallback;
          out.objs[p.slot] = v;  // packed by its field's format (pack_scalar), or the Python way
          break;
        case ArgKind::Stream:
          if (!read_stream(v, out.ptrs[p.slot])) return Outcome::Fallback;
          break;
        case ArgKind::Pointer:
          if (!read_pointer(p, v, out)) return Outcome::Fallback;
          break;
        case ArgKind::Const:
          if (omit && constexprs[i]) break;
          if (v != p.object) return Outcome::Fallback;  // identity; the Python call compares by value
          break;
      }
    }
    return out.need_fallback ? Outcome::Fallback : Outcome::Ready;
  }

  // The grids and packed parameters of every launch (nothing is launched before all of them are known).
  bool prepare(const Values& v, char* buf, rt::Dim3* grids, uint64_t* streams) {
    size_t base = 0;
    for (size_t k = 0; k < launches.size(); ++k) {
      const LaunchPlan& l = launches[k];
      int64_t g[3];
      for (int d = 0; d < 3; ++d) {
        if (!eval(l.grid[d], v.syms, g[d]) || g[d] <= 0 || g[d] > UINT32_MAX) return false;  // the Python call
      }
      grids[k] = rt::Dim3(static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2]));
      streams[k] = l.stream_slot < 0 ? l.stream : v.ptrs[l.stream_slot];
      char* b = buf + base;
      std::memset(b, 0, l.size);
      for (const Param& p : l.params) {
        char* d = b + p.offset;
        bool ok = p.source == Source::Sym   ? pack_int(p.fmt, v.syms[p.slot], d)
                  : p.source == Source::Ptr ? pack_u64(p.fmt, v.ptrs[p.slot], d)
                                            : pack_scalar(p.fmt, v.objs[p.slot], d);
        if (!ok) return false;
      }
      base += (l.size + 15) / 16 * 16;
    }
    return true;
  }

  size_t buffer_size() const {
    size_t n = 0;
    for (auto& l : launches) n += (l.size + 15) / 16 * 16;
    return n;
  }

  // Runs the call: nullptr with an error set, Py_None (new reference) when launched, or `fallback` untouched.
  PyObject* call(PyObject* const* given, Py_ssize_t n, Values& v, bool& fell_back) {
    fell_back = true;
    if (read(given, n, v) == Outcome::Fallback) return nullptr;
    alignas(16) char stack[kStackParams];
    std::unique_ptr<char[]> heap;
    size_t need = buffer_size();
    char* buf = stack;
    if (need > kStackParams) {
      heap.reset(new char[need]);
      buf = heap.get();
    }
    rt::Dim3 grids[8];
    uint64_t streams[8];
    if (!prepare(v, buf, grids, streams)) return nullptr;
    fell_back = false;
    size_t base = 0;
    for (size_t k = 0; k < launches.size(); ++k) {
      LaunchPlan& l = launches[k];
      char* b = buf + base;
      base += (l.size + 15) / 16 * 16;
      if (l.native) {
        try {
          l.native->launch(grids[k], streams[k], b, l.size);
        } catch (const rt::CudaError& e) {
          PyErr_SetString(g_cuda_error ? g_cuda_error : PyExc_RuntimeError, e.what());
          return nullptr;
        } catch (const std::invalid_argument& e) {
          PyErr_SetString(PyExc_ValueError, e.what());
          return nullptr;
        } catch (const std::exception& e) {
          PyErr_SetString(PyExc_RuntimeError, e.what());
          return nullptr;
        }
      } else if (l.target != Py_None) {  // a Python launcher (recording, in tests): Launcher's own signature
        PyObject* r = PyObject_CallFunction(l.target, "IIIKN", grids[k].x, grids[k].y, grids[k].z,
                                            static_cast<unsigned long long>(streams[k]),
                                            PyBytes_FromStringAndSize(b, static_cast<Py_ssize_t>(l.size)));
        if (!r) return nullptr;
        Py_DECREF(r);
      }
    }
    ++native_calls;
    Py_RETURN_NONE;
  }

  // After the Python call accepted a call this path left to it: the torch keys it checked are remembered, once
  // the tensor's DLPack description is seen to be what data_ptr(), shape and stride() say.
  void learn(Values& v) {
    if (cleared) return;
    for (int i = 0; i < v.nmisses; ++i) {
      TorchRead& r = v.misses[i];
      ArgPlan& p = args[r.arg];
      if (r.from_dlpack) {
        int64_t shape[kMaxRank], strides[kMaxRank];
        uint64_t ptr;
        PyObject* dtype = nullptr;
        bool same = torch_attributes(r.tensor, p.rank, shape, strides, ptr, dtype) && ptr == r.ptr &&
                    std::memcmp(shape, r.shape, sizeof(int64_t) * p.rank) == 0 &&
                    std::memcmp(strides, r.strides, sizeof(int64_t) * p.rank) == 0;
        Py_XDECREF(dtype);
        if (!same) {
          r.type->trusted = false;  // attribute reads from now on (their keys are of another form)
          continue;
        }
      } else {
        keep(r.dtype);  // the dtype object whose identity is in the key
      }
      p.keys.insert(r.key);
    }
  }
};

PyTypeObject* g_fast_call_type = nullptr;

int fast_call_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  FastCall* f = nb::inst_ptr<FastCall>(self);
  for (auto& o : f->refs) Py_VISIT(o.ptr());
  return 0;
}

int fast_call_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  FastCall* f = nb::inst_ptr<FastCall>(self);
  f->cleared = true;
  for (auto& l : f->launches) l.native = nullptr, l.target = Py_None;
  std::vector<nb::object> refs;
  refs.swap(f->refs);
  return 0;
}

PyType_Slot g_fast_call_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(fast_call_traverse)},
                                   {Py_tp_clear, reinterpret_cast<void*>(fast_call_clear)},
                                   {0, nullptr}};

Op op_of(const std::string& s) {
  static const std::pair<const char*, Op> ops[] = {{"const", Op::Const}, {"sym", Op::Sym}, {"add", Op::Add},
                                                   {"sub", Op::Sub}, {"mul", Op::Mul}, {"floordiv", Op::FloorDiv},
                                                   {"mod", Op::Mod}, {"xor", Op::Xor}, {"min", Op::Min},
                                                   {"max", Op::Max}, {"neg", Op::Neg}};
  for (auto& [n, o] : ops)
    if (s == n) return o;
  throw std::invalid_argument("FastCall: unknown grid operation '" + s + "'");
}

// A grid program [(operation, operand)] (native_call.grid_program), checked to leave one value on the stack.
Expr parse_program(nb::handle program) {
  Expr e;
  int depth = 0;
  for (nb::handle o : nb::cast<nb::list>(program)) {
    nb::tuple ot = nb::cast<nb::tuple>(o);
    Op op = op_of(nb::cast<std::string>(ot[0]));
    int64_t v = nb::cast<int64_t>(ot[1]);
    if (op == Op::Sym && (v < 0 || v >= kMaxSlots)) throw std::invalid_argument("FastCall: a symbol slot");
    depth += (op == Op::Const || op == Op::Sym) ? 1 : op == Op::Neg ? 0 : -1;
    if (depth < 1 || depth > kMaxExprStack) throw std::invalid_argument("FastCall: a malformed grid");
    e.code.emplace_back(op, v);
  }
  if (depth != 1) throw std::invalid_argument("FastCall: a malformed grid");
  return e;
}

int checked_slot(nb::handle h) {
  int s = nb::cast<int>(h);
  if (s < 0 || s >= kMaxSlots) throw std::invalid_argument("FastCall: a value slot out of range");
  return s;
}

// args: per argument ("skip",) | ("tensor", spec, ptr_slot, rank, torch, [(slot, is_stride, mode)]) |
// ("int", slot) | ("scalar", slot) | ("stream", slot) | ("const", has_value, value) |
// ("pointer", slot, RuntimePointer, element_type, mem_space, assumed_align).
// launches: per launch (target, kernel, [grid programs x3 of (op, operand)], stream_slot, stream, size,
// [(source, fmt, slot, offset)]).
void build_fast_call(FastCall* f, nb::tuple bound_self, int nargs, nb::list defaults, nb::list constexprs,
                     nb::list args, nb::list launches, nb::handle view_type, nb::handle satisfies,
                     nb::handle numeric) {
  if (nargs < 0 || nargs > kMaxArgs) throw std::invalid_argument("FastCall: too many arguments");
  if (nb::len(args) != static_cast<size_t>(nargs) || nb::len(constexprs) != static_cast<size_t>(nargs))
    throw std::invalid_argument("FastCall: one plan and one Constexpr entry per argument");
  if (nb::len(bound_self) > static_cast<size_t>(nargs) || nb::len(defaults) > static_cast<size_t>(nargs))
    throw std::invalid_argument("FastCall: more bound or default values than arguments");
  f->nargs = nargs;
  f->view_type = f->keep(view_type);
  f->satisfies = f->keep(satisfies);
  if (!numeric.is_none()) {
    if (!PyType_Check(numeric.ptr())) throw std::invalid_argument("FastCall: numeric must be a class");
    f->numeric = f->keep(numeric);
  }
  for (nb::handle h : bound_self) f->bound_self.push_back(f->keep(h));
  for (nb::handle h : defaults) f->defaults.push_back(f->keep(h));
  for (nb::handle h : constexprs) {
    bool has = !h.is_none();
    f->constexprs.push_back(has ? f->keep(nb::cast<nb::tuple>(h)[0]) : nullptr);
    f->nconstexprs += has;
  }
  for (nb::handle h : args) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    std::string kind = nb::cast<std::string>(t[0]);
    ArgPlan p;
    if (kind == "skip") {
      p.kind = ArgKind::Skip;
    } else if (kind == "tensor") {
      p.kind = ArgKind::Tensor;
      p.object = f->keep(t[1]);
      p.slot = checked_slot(t[2]);
      p.rank = nb::cast<int>(t[3]);
      if (p.rank < 0 || p.rank > kMaxRank) throw std::invalid_argument("FastCall: tensor rank out of range");
      p.torch = nb::cast<bool>(t[4]);
      p.keys.width = 2 + p.rank;
      for (nb::handle r : nb::cast<nb::list>(t[5])) {
        nb::tuple rr = nb::cast<nb::tuple>(r);
        SymRead s{nb::cast<bool>(rr[1]), nb::cast<int>(rr[2]), checked_slot(rr[0])};
        if (s.mode < 0 || s.mode >= p.rank) throw std::invalid_argument("FastCall: a mode out of range");
        p.reads.push_back(s);
      }
    } else if (kind == "int" || kind == "scalar" || kind == "stream") {
      p.kind = kind == "int" ? ArgKind::Int : kind == "scalar" ? ArgKind::Scalar : ArgKind::Stream;
      p.slot = checked_slot(t[1]);
    } else if (kind == "pointer") {
      p.kind = ArgKind::Pointer;
      p.slot = checked_slot(t[1]);
      if (!PyType_Check(t[2].ptr())) throw std::invalid_argument("FastCall: a pointer's type must be a class");
      p.object = f->keep(t[2]);
      p.element_type = f->keep(t[3]);
      p.mem_space = f->keep(t[4]);
      p.align = nb::cast<int64_t>(t[5]);
    } else if (kind == "const") {
      p.kind = ArgKind::Const;
      p.object = nb::cast<bool>(t[1]) ? f->keep(t[2]) : nullptr;
    } else {
      throw std::invalid_argument("FastCall: unknown argument kind '" + kind + "'");
    }
    f->args.push_back(std::move(p));
  }
  if (nb::len(launches) > 8) throw std::invalid_argument("FastCall: more than 8 launches");
  nb::handle launcher_type = nb::type<Launcher>();
  for (nb::handle h : launches) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    LaunchPlan l;
    l.target = f->keep(t[0]);
    if (launcher_type.is_valid() && nb::isinstance<Launcher>(t[0])) l.native = nb::inst_ptr<Launcher>(t[0]);
    l.kernel = nb::cast<std::string>(t[1]);
    nb::list grid = nb::cast<nb::list>(t[2]);
    if (nb::len(grid) != 3) throw std::invalid_argument("FastCall: a grid has 3 extents");
    for (int d = 0; d < 3; ++d) l.grid[d] = parse_program(grid[d]);
    l.stream_slot = nb::cast<int>(t[3]);
    if (l.stream_slot >= kMaxSlots) throw std::invalid_argument("FastCall: a stream slot out of range");
    l.stream = nb::cast<uint64_t>(t[4]);
    l.size = nb::cast<uint32_t>(t[5]);
    if (l.native && l.native->offsets.size() != nb::len(nb::cast<nb::list>(t[6])))
      throw std::invalid_argument("FastCall: the launcher's parameters differ from the plan's");
    for (nb::handle ph : nb::cast<nb::list>(t[6])) {
      nb::tuple pt = nb::cast<nb::tuple>(ph);
      std::string src = nb::cast<std::string>(pt[0]), fmt = nb::cast<std::string>(pt[1]);
      Param p{src == "sym" ? Source::Sym : src == "ptr" ? Source::Ptr : Source::Scalar, fmt.size() == 1 ? fmt[0] : '\0',
              checked_slot(pt[2]), nb::cast<uint32_t>(pt[3])};
      if (src != "sym" && src != "ptr" && src != "scalar") throw std::invalid_argument("FastCall: parameter source");
      if (!fmt_size(p.fmt) || p.offset + fmt_size(p.fmt) > l.size)
        throw std::invalid_argument("FastCall: a parameter's format or offset");
      l.params.push_back(p);
    }
    f->launches.push_back(std::move(l));
  }
}

void init_fast_call(FastCall* self, nb::tuple bound_self, int nargs, nb::list defaults, nb::list constexprs,
                    nb::list args, nb::list launches, nb::handle view_type, nb::handle satisfies,
                    nb::handle numeric) {
  FastCall f;
  build_fast_call(&f, bound_self, nargs, defaults, constexprs, args, launches, view_type, satisfies, numeric);
  new (self) FastCall(std::move(f));
}

// CompiledFunctionBase: the C base of JitCompiledFunction. Its instances are called through their own vectorcall
// slot (a Python subclass inherits it when it does not define __call__), so a call reaches the FastCall held in
// the `_native` field without the argument tuple, the __call__ lookup and the attribute read that a Python-level
// __call__ costs. What the FastCall does not take goes to type(self)._call(self, *args, **kwargs).
struct CompiledBaseObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* native;  // a FastCall, or null
};

PyObject* g_call_name = nullptr;  // "_call"

// type(self)._call(self, *args, **kwargs), the arguments given as a vectorcall's.
PyObject* call_python(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  Py_ssize_t total = n + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  if (nargsf & PY_VECTORCALL_ARGUMENTS_OFFSET) {  // the caller lets args[-1] be borrowed for the call
    // (and only that slot: the call below does not pass the flag on, so a[-1] stays untouched)
    PyObject** a = const_cast<PyObject**>(args) - 1;
    PyObject* saved = a[0];
    a[0] = self;
    PyObject* r = PyObject_VectorcallMethod(g_call_name, a, static_cast<size_t>(n + 1), kwnames);
    a[0] = saved;
    return r;
  }
  PyObject* small[16];
  std::unique_ptr<PyObject*[]> big;
  PyObject** a = small;
  if (total + 1 > 16) {
    big.reset(new PyObject*[total + 1]);
    a = big.get();
  }
  a[0] = self;
  for (Py_ssize_t i = 0; i < total; ++i) a[i + 1] = args[i];
  return PyObject_VectorcallMethod(g_call_name, a, static_cast<size_t>(n + 1), kwnames);
}

PyObject* compiled_base_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* o = reinterpret_cast<CompiledBaseObject*>(self);
  PyObject* native = o->native;
  if (!native || (kwnames && PyTuple_GET_SIZE(kwnames))) return call_python(self, args, nargsf, kwnames);
  Py_INCREF(native);  // reading an argument may run Python code that replaces self._native
  FastCall* f = nb::inst_ptr<FastCall>(native);
  Values v;
  bool fell_back;
  PyObject* r = f->call(args, PyVectorcall_NARGS(nargsf), v, fell_back);
  if (fell_back) {
    ++f->fallbacks;
    r = call_python(self, args, nargsf, kwnames);
    if (r && v.nmisses) f->learn(v);
  }
  Py_DECREF(native);
  return r;
}

PyObject* compiled_base_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<CompiledBaseObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = compiled_base_vectorcall;
  self->native = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

int compiled_base_traverse(PyObject* o, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(o));
  Py_VISIT(reinterpret_cast<CompiledBaseObject*>(o)->native);
  return 0;
}

int compiled_base_clear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<CompiledBaseObject*>(o)->native);
  return 0;
}

void compiled_base_dealloc(PyObject* o) {
  PyTypeObject* tp = Py_TYPE(o);
  PyObject_GC_UnTrack(o);
  compiled_base_clear(o);
  tp->tp_free(o);
  Py_DECREF(tp);
}

PyObject* compiled_base_get_native(PyObject* self, void*) {
  PyObject* n = reinterpret_cast<CompiledBaseObject*>(self)->native;
  return Py_NewRef(n ? n : Py_None);
}

int compiled_base_set_native(PyObject* self, PyObject* value, void*) {
  if (value != nullptr && value != Py_None && Py_TYPE(value) != g_fast_call_type) {
    PyErr_SetString(PyExc_TypeError, "_native: a warpweave._core.FastCall or None");
    return -1;
  }
  auto* o = reinterpret_cast<CompiledBaseObject*>(self);
  PyObject* old = o->native;
  o->native = value == Py_None ? nullptr : Py_XNewRef(value);
  Py_XDECREF(old);
  return 0;
}

PyMemberDef g_compiled_base_members[] = {
    {"__vectorcalloffset__", Py_T_PYSSIZET, offsetof(CompiledBaseObject, vectorcall), Py_READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef g_compiled_base_getset[] = {
    {"_native", compiled_base_get_native, compiled_base_set_native,
     "the native fast path (a FastCall) that a call tries first, or None", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot g_compiled_base_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(compiled_base_new)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_traverse, reinterpret_cast<void*>(compiled_base_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(compiled_base_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(compiled_base_dealloc)},
    {Py_tp_members, g_compiled_base_members},
    {Py_tp_getset, g_compiled_base_getset},
    {Py_tp_doc, const_cast<char*>("The base of a compiled function: a call runs self._native (a FastCall), and "
                                  "type(self)._call(self, *args, **kwargs) for what that does not take.")},
    {0, nullptr}};

PyType_Spec g_compiled_base_spec = {
    "warpweave._core.CompiledFunctionBase", sizeof(CompiledBaseObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, g_compiled_base_slots};

}  // namespace

void bind_fast_call(nb::module_& m) {
  g_names = {intern("element_type"), intern("mem_space"), intern("assumed_align"), intern("address"), intern("_spec"), intern("spec"), intern("_v"), intern("data_ptr"), intern("_shape"), intern("_strides"),
             intern("dtype"), intern("stride"), intern("shape"), intern("cuda_stream"), intern("__name__"),
             intern("__module__")};
  if (nb::hasattr(m, "CudaError")) g_cuda_error = nb::getattr(m, "CudaError").inc_ref().ptr();
  g_cuda_stream_name = g_names.cuda_stream;
  g_ptr_name = intern("ptr");
  g_handle_name = intern("handle");
  g_view_watcher = PyDict_AddWatcher(view_dict_changed);  // -1 (no cache) when the interpreter has none left
  if (g_view_watcher < 0) PyErr_Clear();

  nb::class_<FastCall> fc(m, "FastCall", nb::type_slots(g_fast_call_slots),
                          "The native fast path of one compiled function's calls (built by _dsl/call/native_call.py).");
  fc.def("__init__", &init_fast_call, nb::arg("bound_self"), nb::arg("nargs"), nb::arg("defaults"),
         nb::arg("constexprs"), nb::arg("args"), nb::arg("launches"), nb::arg("view_type"), nb::arg("satisfies"),
         nb::arg("numeric") = nb::none())
      // The launches a call would make, [(grid, stream, parameter bytes)], without making them; None where the
      // call would go the Python way.
      .def("packed", [](FastCall& f, nb::args args) -> nb::object {
        std::vector<PyObject*> given;
        for (nb::handle h : args) given.push_back(h.ptr());
        Values v;
        if (f.read(given.data(), static_cast<Py_ssize_t>(given.size()), v) == Outcome::Fallback) return nb::none();
        std::vector<char> buf(f.buffer_size() + 16);
        rt::Dim3 grids[8];
        uint64_t streams[8];
        if (!f.prepare(v, buf.data(), grids, streams)) return nb::none();
        nb::list out;
        size_t base = 0;
        for (size_t k = 0; k < f.launches.size(); ++k) {
          const LaunchPlan& l = f.launches[k];
          out.append(nb::make_tuple(nb::make_tuple(grids[k].x, grids[k].y, grids[k].z), streams[k],
                                    nb::bytes(buf.data() + base, l.size)));
          base += (l.size + 15) / 16 * 16;
        }
        return out;
      })
      .def_prop_ro("stats", [](const FastCall& f) { return nb::make_tuple(f.native_calls, f.fallbacks); },
                   "(calls taken natively, calls left to the Python call)");
  g_fast_call_type = reinterpret_cast<PyTypeObject*>(fc.ptr());

  // For tests: a grid program evaluated as a call evaluates it (None where the call would go the Python way:
  // a division by zero, or a value leaving 64 bits), and the torch tensor types seen with how they are read.
  m.def("fast_call_eval", [](nb::handle program, const std::vector<int64_t>& syms) -> nb::object {
    Expr e = parse_program(program);
    int64_t all[kMaxSlots] = {};
    for (size_t i = 0; i < syms.size() && i < static_cast<size_t>(kMaxSlots); ++i) all[i] = syms[i];
    int64_t r;
    if (!eval(e, all, r)) return nb::none();
    return nb::int_(r);
  });
  m.def("fast_call_torch_types", []() {
    nb::list out;
    for (int i = 0; i < g_ntorch_types; ++i) {
      const TorchType& t = g_torch_types[i];
      out.append(nb::make_tuple(nb::handle(t.type), t.api != nullptr && t.trusted));
    }
    return out;
  }, "[(type, read through its DLPack exchange table)] of the torch tensor types compiled calls have seen");

  g_call_name = intern("_call");
  PyObject* base = PyType_FromModuleAndSpec(m.ptr(), &g_compiled_base_spec, nullptr);
  if (!base) throw nb::python_error();
  m.attr("CompiledFunctionBase") = nb::steal(base);
}
