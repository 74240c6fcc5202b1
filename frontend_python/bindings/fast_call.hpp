// The native fast path of a compiled function's call (warpweave._core.FastCall): the plan a call is read by,
// fixed when the fast path is built (warpweave/_dsl/call/native_call.py, each argument described by its plan class,
// _dsl/call/arg_kind.py), and the reader/packer/launcher over it. It accepts only what it can check as strictly
// as the Python fast path (compiled_function._build_fast_call) does; anything else (another type, an unseen
// specialisation key, a value out of its field's range, an empty grid, keywords, ...) goes to the Python call,
// which gives today's results and errors. No MLIR here: these files compile in seconds.
//
// fast_call.hpp               the plan and FastCall (reading the arguments, packing, launching)
// fast_call_values.cpp        reading Python values (integers, torch tensor types, streams), grids, packing
// fast_call_tree.cpp          reading a list or tuple of numbers (TreeArg), comparing compile-time values
// fast_call_bindings.cpp      FastCall built from native_call.py's description, and its Python type
// compiled_function_base.cpp  warpweave._core.CompiledFunctionBase, whose vectorcall slot runs the FastCall
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlpack_exchange.hpp"
#include "fast_call_hosts.hpp"
#include "fast_call_int_ops.hpp"
#include "launcher.hpp"
#include "ww/runtime/error.hpp"

namespace ww::py::fast_call {

namespace nb = nanobind;
namespace rt = ww::runtime;
using ww::py::Launcher;

constexpr int kMaxArgs = 64;         // arguments of a function the native path takes
constexpr int kMaxSlots = 256;       // values read from the arguments (symbols, addresses, streams, scalars)
constexpr int kMaxRank = 16;         // tensor rank
constexpr int kMaxExprStack = 32;    // depth of a grid expression
constexpr size_t kMaxTorchKeys = 64; // accepted torch specialisation keys kept per argument
constexpr size_t kStackParams = 4096;
constexpr int kMaxOwned = kMaxSlots; // references a call holds (numbers of Numeric arguments, a list's elements)
constexpr int kMaxTreeDepth = 16;    // nesting of a list or tuple argument

// The kinds of argument, numbered as _dsl/call/arg_kind.py's NATIVE_ codes. Tree: a list or tuple of numbers and
// compile-time values (call/arg_tensor.py's TreeArg), each element read as an argument of its kind.
enum class ArgKind : uint8_t { Skip, Tensor, Int, Scalar, Stream, Const, Pointer, Event, Tree };
// Host: the bytes of a host argument (HostArg, its index in `slot`), copied whole.
enum class Source : uint8_t { Sym, Ptr, Scalar, Float, Host };
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
inline uint64_t g_view_epoch = 1;
inline int g_view_watcher = -1;

inline int view_dict_changed(PyDict_WatchEvent, PyObject*, PyObject*, PyObject*) {
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
  int bits = 64;               // Int: the width of its type (a value outside it goes the Python way, which refuses it)
  bool torch = false;          // Tensor: a torch tensor may be passed directly
  // Pointer: what a RuntimePointer must hold to match the compiled one (its type in `object`).
  PyObject* element_type = nullptr;
  PyObject* mem_space = nullptr;
  int64_t align = 0;
  std::vector<SymRead> reads;
  TorchKeys keys;
  ViewCache view;
  std::vector<ArgPlan> children;  // Tree: its elements' plans (Int, Scalar, Const or Tree), in order
};

struct Param {
  Source source;
  char fmt;  // struct format character
  int slot;
  uint32_t offset;
};

// One instruction of eval(): `code`'s operation, or (rhs 1, 2) an integer binary operation whose right operand
// is the constant x (1) or the value in symbol slot x (2), the leaf that came before it in `code`.
struct Ins {
  Op op;
  uint8_t rhs;
  int64_t x;
};

struct Expr {
  std::vector<std::pair<Op, int64_t>> code;
  // No argument, float constant, true division or conversion to a float: integers throughout, which eval()
  // computes as eval_host() does, without the typed stack (parse_program sets it).
  bool integer_only = true;
  // `code` for eval(), each binary operation on a constant or a symbol one instruction with its operand: one
  // dispatch and no push for it (parse_program makes it).
  std::vector<Ins> ins;
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
  std::vector<int> predicates;  // symbol slots that must all be non-zero for the launch to be made
  // cooperative= and use_pdl=: fixed (flag_slots -1), or the Boolean in a symbol slot at each call; with neither,
  // the launcher's prepared launch (Launcher::kAsPrepared).
  bool has_flags = false;
  bool flags[2] = {false, false};
  int flag_slots[2] = {-1, -1};
  // A preferred cluster and the event attributes (fixed when compiled), the events' handles in Values::ptrs
  // slots (-1: none): launch completion, programmatic.
  bool has_extras = false;
  LaunchExtras extras;
  int event_slots[2] = {-1, -1};

  int flags_of(const int64_t* syms) const {
    if (!has_flags) return has_extras ? 0 : Launcher::kAsPrepared;
    bool coop = flag_slots[0] < 0 ? flags[0] : syms[flag_slots[0]] != 0;
    bool pdl = flag_slots[1] < 0 ? flags[1] : syms[flag_slots[1]] != 0;
    return (coop ? Launcher::kCooperative : 0) | (pdl ? Launcher::kProgrammatic : 0);
  }

  // This call's extra attributes (its events' handles read from its arguments), or null where it has none.
  const LaunchExtras* extras_of(const uint64_t* ptrs, LaunchExtras& out) const {
    if (!has_extras) return nullptr;
    out = extras;
    if (event_slots[0] >= 0) out.completion_event = ptrs[event_slots[0]];
    if (event_slots[1] >= 0) out.programmatic_event = ptrs[event_slots[1]];
    return &out;
  }
};

// One value of the host program: `code` evaluated into symbol slot `slot`, after the arguments are read.
struct Derived {
  int slot;
  Expr code;
  std::vector<int> guards;  // made in host branches: computed when every guard is non-zero, else 0
  bool is_float = false;    // its value goes to Values::fvals[slot]
  int64_t expected = -1;    // a guard of the compiled function: the value it must have, else the Python call
};

// One step of a host program: a value, or (loop >= 0) the host loop FastCall::loops[loop] run whole.
struct Step {
  int loop = -1;
  Derived value;
};

// A value a host loop carries from trip to trip (_dsl/host/host_loop.py's Carried): `init` before the first trip,
// `next` after each (both end in the cast to its type); read in `in_slot` during a trip, `out_slot` after the loop.
struct Carry {
  int in_slot, out_slot;
  Expr init, next;
};

// A host loop (host_loop.py's HostLoop): a `for` over (start, stop, step), its variable in `iv_slot`, or a
// `while` on `cond_code` after the `cond` steps of each trip; the `body` steps at each trip. It runs when every
// guard slot is non-zero (the host branches it is in), else its carried values are 0.
struct LoopPlan {
  std::vector<int> guards;
  bool is_while = false;
  Expr bounds[3];
  std::vector<Step> cond;
  Expr cond_code;
  int iv_slot = -1;
  std::vector<Carry> carried;
  std::vector<Step> body;
  // Values of the body that every trip computes alike (native_code.split_invariant): computed at the first trip
  // of each run of the loop, before `body`.
  std::vector<Step> first;
  // Launches only: it carries nothing and nothing outside it reads its values, so as a step of the program it
  // does nothing the order's run of it (which makes its launches) does not do: that run alone is made.
  bool launches_only = false;
};

// The order of a call's launches (host_loop.launches_of_call): launch `launch`, or (loop >= 0) the trips of a
// loop, each making the launches of `inner`.
struct OrderNode {
  int launch = -1;
  int loop = -1;
  std::vector<OrderNode> inner;
};

constexpr int kMaxCallLaunches = 1 << 16;   // launches one call makes natively (more: the Python call)
constexpr int64_t kMaxCallTrips = 1 << 24;  // host loop trips one call runs natively (more: the Python call)

// The launches of one call, recorded before any is made: which, its grid and stream, and where its parameters
// are in the call's parameter bytes. Small calls need no allocation.
struct Recorded {  // trivially constructible: a call's records are not initialised before use
  int launch;
  int flags;  // LaunchPlan::flags_of this call (or trip)
  unsigned grid[3];
  uint64_t stream;
  size_t offset;
};

struct CallLaunches {
  Recorded small[8];
  std::vector<Recorded> more;
  int n = 0;
  int64_t trips = 0;  // host loop trips run so far
  alignas(16) char stack[kStackParams];
  std::vector<char> heap;
  size_t used = 0;

  Recorded& at(int i) { return i < 8 ? small[i] : more[i - 8]; }
  char* bytes() { return heap.empty() ? stack : heap.data(); }
  // A new record with `size` zeroed parameter bytes (16-aligned); null past kMaxCallLaunches.
  Recorded* add(int launch, uint32_t size) {
    if (n >= kMaxCallLaunches) return nullptr;
    size_t need = used + (size + 15) / 16 * 16;
    size_t room = heap.empty() ? kStackParams : heap.size();
    if (need > room) {
      std::vector<char> grown(std::max(need, room * 2));
      std::memcpy(grown.data(), bytes(), used);
      heap.swap(grown);
    }
    Recorded* r = n < 8 ? &small[n] : &more.emplace_back();
    ++n;
    r->launch = launch;
    r->offset = used;
    std::memset(bytes() + used, 0, need - used);
    used = need;
    return r;
  }
};

// A torch tensor type seen in a call, with its DLPack exchange table when it offers one. `trusted` drops to
// false for good if a tensor's DLPack description ever differs from its data_ptr()/shape/stride().
struct TorchType {
  PyObject* type;
  const ww::py::dlpack::ExchangeApi* api;
  bool trusted;
};
inline TorchType g_torch_types[8];  // fixed places: a call keeps pointers to them
inline int g_ntorch_types = 0;
inline std::vector<PyObject*> g_not_torch;  // types seen that are not torch.Tensor (strong references)

inline PyObject* g_cuda_error = nullptr;  // warpweave._core.CudaError
struct Names {
  PyObject *element_type, *mem_space, *assumed_align, *address;
  PyObject *spec, *spec_method, *numeric_value, *data_ptr, *shape_, *strides_, *dtype, *stride, *shape, *cuda_stream, *name, *module;
};
// Whether values.host_inputs.stream_handle reads a stream of this type as int(x): a type that cannot change (static or
// immutable), with the generic getattr and no instance dict, so that getattr(x, "cuda_stream" / "ptr" /
// "handle", None) is None for each of its objects, and that int() converts. Kept per type.
struct StreamType {
  PyObject* type;
  bool by_int;
};
inline Names g_names;
inline StreamType g_stream_types[16];
inline int g_nstream_types = 0;
inline StreamType g_event_types[16];  // the same of event arguments (getattr(x, "cuda_event", None) is None)
inline int g_nevent_types = 0;
inline PyObject *g_cuda_stream_name, *g_ptr_name, *g_handle_name, *g_cuda_event_name;
inline PyTypeObject* g_fast_call_type = nullptr;  // FastCall's Python type (fast_call_bindings.cpp)

PyObject* intern(const char* s);
bool read_i64(PyObject* o, int64_t& out);
bool read_u64(PyObject* o, uint64_t& out);
// The stride part of a specialisation key: -1 for a unit stride, else its lowest set bit (0 for 0).
int64_t stride_key(int64_t x);
// A grid program over the symbol slots, with Python's integer semantics: false where Python raises or leaves
// 64 bits.
bool eval(const Expr& e, const int64_t* syms, int64_t& out);
// Writes v as struct format `fmt` (native byte order, standard sizes) where it fits the field.
bool pack_int(char fmt, int64_t v, char* d);
bool pack_u64(char fmt, uint64_t v, char* d);
// A scalar argument as the Python call packs it (ints, bools and floats only; a Numeric goes the Python way).
bool pack_scalar(char fmt, PyObject* o, char* d);
// A float as struct format 'e', 'f' or 'd' (rounded as struct.pack rounds).
bool pack_double(char fmt, double x, char* d);
int fmt_size(char fmt);
// The torch.Tensor type of `tp` (what the Python call tests: type name 'Tensor' in module 'torch'), or null.
TorchType* torch_type(PyTypeObject* tp);
// Whether values.host_inputs.stream_handle reads a stream of this type as int(x).
bool stream_by_int(PyTypeObject* tp);
// Whether an event argument of this type is read by int() of it (cuda.bindings' CUevent, cudaEvent_t: no
// cuda_event attribute); fast_call_values.cpp.
bool event_by_int(PyTypeObject* tp);
// Whether a compile-time value `given` is `compiled` by value where both are of one exact type among int, float,
// str and tuples of them (const_key then compares equal); false for anything else, which the Python call compares.
// fast_call_tree.cpp.
bool same_const(PyObject* compiled, PyObject* given);

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
  double fvals[kMaxSlots];  // the host program's float values, by the slot of their symbol
  uint64_t ptrs[kMaxSlots];
  PyObject* objs[kMaxSlots];
  const char* hosts[kMaxHosts];  // the call's host argument bytes (HostArg::value), by host argument
  TorchRead misses[4];
  int nmisses = 0;
  bool need_fallback = false;
  // References held for the call: the numbers read out of Numeric arguments, the scalars read from lists.
  PyObject* owned[kMaxOwned];
  int nowned = 0;

  Values() = default;
  Values(const Values&) = delete;
  ~Values() {
    for (int i = 0; i < nmisses; ++i) Py_XDECREF(misses[i].dtype);
    for (int i = 0; i < nowned; ++i) Py_DECREF(owned[i]);
  }
};

// One value of a host program over integers and floats (host_program_eval.cpp), as _dsl/host/host_program.py's
// run_code computes it; false where the Python call must take the call.
bool eval_host(const Expr& e, const Values& v, bool want_float, int64_t& iout, double& fout);

// The attribute form of a torch tensor: stride(), data_ptr(), dtype, shape, as the Python call reads them;
// `dtype` a new reference on success.
bool torch_attributes(PyObject* v, int rank, int64_t* shape, int64_t* strides, uint64_t& ptr, PyObject*& dtype);

struct FastCall {
  std::vector<nb::object> refs;  // every Python object the plan points to
  std::vector<PyObject*> bound_self;
  int nargs = 0;
  std::vector<PyObject*> defaults;
  std::vector<PyObject*> constexprs;  // per argument: its compiled value when Constexpr, else null
  int nconstexprs = 0;
  std::vector<ArgPlan> args;
  std::vector<Step> program;      // the host program, in order
  std::vector<LoopPlan> loops;     // its host loops (a loop's inner loops have lower indices)
  std::vector<OrderNode> order;    // the call's launches, in order
  std::vector<LaunchPlan> launches;
  std::vector<HostArg> hosts;
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
    if (out.nowned >= kMaxOwned) return nullptr;
    PyObject* x = PyObject_GetAttr(v, g_names.numeric_value);
    if (!x) {
      PyErr_Clear();
      return nullptr;
    }
    out.owned[out.nowned++] = x;
    return PyLong_CheckExact(x) || PyBool_Check(x) || PyFloat_CheckExact(x) ? x : nullptr;
  }

  // An integer argument (or element) of its width, as IntArg.value_of reads it where it raises nothing.
  bool read_int(const ArgPlan& p, PyObject* v, Values& out) {
    v = number(v, out);
    return v && (PyLong_CheckExact(v) || PyBool_Check(v)) && read_i64(v, out.syms[p.slot]) &&
           (p.bits == 64 || (out.syms[p.slot] >= INT32_MIN && out.syms[p.slot] <= INT32_MAX));
  }

  // A list or tuple argument (or element) of the compiled length, each element read by its plan; `hold`: it is
  // in a list, whose scalars the call holds references to. fast_call_tree.cpp.
  bool read_tree(const ArgPlan& p, PyObject* v, Values& out, bool hold);

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
    if (stream_by_int(Py_TYPE(v))) {  // cuda.bindings' CUstream: int() of it, as values.host_inputs.stream_handle ends
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

  // An event argument's handle, as values.host_inputs.event_handle reads it: None is 0, an int, a torch event's
  // cuda_event, cuda.bindings' CUevent and cudaEvent_t by int(); false where the Python call must read it.
  static bool read_event(PyObject* v, uint64_t& out) {
    if (v == Py_None) {
      out = 0;
      return true;
    }
    if (PyLong_Check(v)) return !PyBool_Check(v) && read_u64(v, out);
    PyObject* h = nullptr;
    if (!event_by_int(Py_TYPE(v))) {
      h = PyObject_GetAttr(v, g_cuda_event_name);
      if (!h) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
          PyErr_Clear();
          return false;
        }
        PyErr_Clear();
      } else if (h == Py_None) {
        Py_CLEAR(h);
      } else {
        bool ok = PyLong_CheckExact(h) && read_u64(h, out);
        Py_DECREF(h);
        return ok;
      }
    }
    PyObject* i = PyNumber_Long(v);
    bool ok = i && read_u64(i, out);
    if (!i) PyErr_Clear();
    Py_XDECREF(i);
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
          if (!read_int(p, v, out)) return Outcome::Fallback;
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
        case ArgKind::Event:
          if (!read_event(v, out.ptrs[p.slot])) return Outcome::Fallback;
          break;
        case ArgKind::Const:
          if (omit && constexprs[i]) break;
          // identity, or equal numbers, strings and tuples of them; the Python call compares anything else
          if (v != p.object && !(p.object && same_const(p.object, v))) return Outcome::Fallback;
          break;
        case ArgKind::Tree:
          if (!read_tree(p, v, out, false)) return Outcome::Fallback;
          break;
      }
    }
    if (out.need_fallback) return Outcome::Fallback;
    for (size_t h = 0; h < hosts.size(); ++h) {
      out.hosts[h] = hosts[h].value(a[hosts[h].arg], out.syms, out.ptrs);
      if (!out.hosts[h]) return Outcome::Fallback;
    }
    return Outcome::Ready;
  }

  // The host program's steps, in order (host loops run whole, for their carried values); false where the Python
  // call must take the call (it raises what Python raises: a division by zero, say). host_program_eval.cpp.
  bool run_host_program(Values& v) const;

  // The grid, stream and packed parameters of every launch the call makes, in launches_of_call's order (a launch
  // in host loops once per trip), recorded before any is made; a launch whose predicates do not all hold is not
  // recorded. False where the call goes the Python way. host_program_eval.cpp.
  bool prepare(Values& v, CallLaunches& out) const;

  // Marks the loops that are launches only (LoopPlan::launches_only), once the plan is built.
  void mark_launch_only_loops();

  // Runs the call: nullptr with an error set, Py_None (new reference) when launched, or `fallback` untouched.
  PyObject* call(PyObject* const* given, Py_ssize_t n, Values& v, bool& fell_back) {
    fell_back = true;
    if (read(given, n, v) == Outcome::Fallback) return nullptr;
    CallLaunches made;
    if (!run_host_program(v) || !prepare(v, made)) return nullptr;
    fell_back = false;
    for (int k = 0; k < made.n; ++k) {
      const Recorded& r = made.at(k);
      const LaunchPlan& l = launches[r.launch];
      char* b = made.bytes() + r.offset;
      if (l.native) {
        try {
          LaunchExtras ex;
          l.native->launch(rt::Dim3(r.grid[0], r.grid[1], r.grid[2]), r.stream, b, l.size, r.flags,
                           l.extras_of(v.ptrs, ex));
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
        PyObject* res = PyObject_CallFunction(l.target, "IIIKN", r.grid[0], r.grid[1], r.grid[2],
                                              static_cast<unsigned long long>(r.stream),
                                              PyBytes_FromStringAndSize(b, static_cast<Py_ssize_t>(l.size)));
        if (!res) return nullptr;
        Py_DECREF(res);
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

// A grid program [(operation, operand)] (native_call.grid_program), checked to leave one value on the stack.
Expr parse_program(nb::handle program);
// warpweave._core.CompiledFunctionBase (compiled_function_base.cpp).
void bind_compiled_function_base(nb::module_& m);

}  // namespace ww::py::fast_call
