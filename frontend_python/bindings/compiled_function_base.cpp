// warpweave._core.CompiledFunctionBase: the C base of JitCompiledFunction, whose vectorcall slot runs the
// compiled function's FastCall (fast_call.hpp) and leaves what it does not take to the Python call.
#include "fast_call.hpp"

namespace ww::py::fast_call {
namespace {

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

void bind_compiled_function_base(nb::module_& m) {
  g_call_name = intern("_call");
  PyObject* base = PyType_FromModuleAndSpec(m.ptr(), &g_compiled_base_spec, nullptr);
  if (!base) throw nb::python_error();
  m.attr("CompiledFunctionBase") = nb::steal(base);
}

}  // namespace ww::py::fast_call
