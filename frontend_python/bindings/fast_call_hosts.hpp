// The host arguments of the native fast path (fast_call.hpp): parameter bytes computed on the host per call.
#pragma once

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ww::py::fast_call {

constexpr int kMaxHosts = 16;          // host arguments (TMA descriptors, say) of a function the native path takes
constexpr size_t kMaxHostMemo = 64;    // their values kept per host argument (as host_arguments.MEMO_ENTRIES)
constexpr size_t kMaxHostKey = 256;    // symbol slots in one host argument's key

// A host argument (_dsl/atoms/host_arguments.py): parameter bytes a producer computes on the host from one tensor
// or pointer argument and the call's host symbols. They are a function of the argument's address, its dynamic
// extents and strides and the symbols its attributes use, all in value slots: the bytes are kept per such key,
// and a key not seen yet asks the Python producer (`produce(argument, values of its symbols)`), whose failure
// leaves the call to the Python path (which raises its error).
struct HostArg {
  PyObject* produce = nullptr;
  int arg = -1;                // the argument it is computed from
  int ptr_slot = -1;           // that argument's address
  std::vector<int> key_slots;  // symbol slots of the key: the argument's extents and strides, then
  int nproduce = 0;            // the last nproduce: the symbols handed to produce
  uint32_t size = 0;
  std::vector<int64_t> keys;   // kept keys, 1 + key_slots.size() each
  std::vector<std::string> values;
  size_t last = 0;

  // The bytes for this call (null where the Python call must take it), kept for later calls with the same key.
  const char* value(PyObject* argument, const int64_t* syms, const uint64_t* ptrs) {
    size_t w = 1 + key_slots.size();
    int64_t key[1 + kMaxHostKey];
    key[0] = static_cast<int64_t>(ptrs[ptr_slot]);
    for (size_t i = 0; i < key_slots.size(); ++i) key[1 + i] = syms[key_slots[i]];
    size_t n = values.size();
    if (last < n && std::memcmp(&keys[last * w], key, sizeof(int64_t) * w) == 0) return values[last].data();
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(&keys[i * w], key, sizeof(int64_t) * w) == 0) {
        last = i;
        return values[i].data();
      }
    }
    PyObject* given = PyTuple_New(nproduce);
    if (!given) {
      PyErr_Clear();
      return nullptr;
    }
    for (int i = 0; i < nproduce; ++i) {
      PyObject* x = PyLong_FromLongLong(key[w - nproduce + i]);
      if (!x) {
        Py_DECREF(given);
        PyErr_Clear();
        return nullptr;
      }
      PyTuple_SET_ITEM(given, i, x);
    }
    PyObject* r = PyObject_CallFunctionObjArgs(produce, argument, given, nullptr);
    Py_DECREF(given);
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (!r || !PyBytes_Check(r) || PyBytes_AsStringAndSize(r, &data, &len) != 0 ||
        len != static_cast<Py_ssize_t>(size)) {
      Py_XDECREF(r);
      PyErr_Clear();
      return nullptr;
    }
    if (n >= kMaxHostMemo) {
      keys.clear();
      values.clear();
    }
    keys.insert(keys.end(), key, key + w);
    values.emplace_back(data, size);
    Py_DECREF(r);
    last = values.size() - 1;
    return values[last].data();
  }
};

}  // namespace ww::py::fast_call
