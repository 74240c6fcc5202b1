// One value of a host program (_dsl/host/host_program.py) on the native fast path: integers with the grid
// programs' checked semantics, floats as Python's floats, each step typed as run_code types it, so that a call
// computes here exactly what the Python call computes; anything else (a division by zero, a value leaving 64
// bits, a number that is not an int or float) leaves the call to Python, which raises or computes it.
#include <cmath>

#include "fast_call.hpp"

namespace ww::py::fast_call {
namespace {

struct Num {
  bool f;
  int64_t i;
  double d;
  double as_double() const { return f ? d : static_cast<double>(i); }
  bool truth() const { return f ? d != 0.0 : i != 0; }
};

Num integer(int64_t i) { return Num{false, i, 0.0}; }
Num floating(double d) { return Num{true, 0, d}; }

bool cast(Num& x, int64_t code) {
  if (code >= 512) {  // Float32 / Float64
    double d = x.as_double();
    x = floating((code & 255) == 32 ? static_cast<double>(static_cast<float>(d)) : d);
    return true;
  }
  if (code == 0) {  // a Boolean: any non-zero number, a float's fraction included
    x = integer(x.truth());
    return true;
  }
  if (x.f) {  // C's truncation toward zero, as the DSL converts; Python handles what leaves 64 bits
    if (!std::isfinite(x.d) || std::fabs(x.d) >= 9.2e18) return false;
    x = integer(static_cast<int64_t>(x.d));
  }
  int bits = static_cast<int>(code & 255);
  bool is_signed = (code & 256) != 0;
  if (bits == 0) {
    x.i = x.i != 0;
  } else if (bits < 64) {
    uint64_t mask = (uint64_t{1} << bits) - 1, u = static_cast<uint64_t>(x.i) & mask;
    if (is_signed && (u >> (bits - 1)) != 0) u |= ~mask;
    x.i = static_cast<int64_t>(u);
  } else if (!is_signed && x.i < 0) {
    return false;
  }
  return true;
}

bool float_binary(Op op, double a, double b, Num& r) {
  switch (op) {
    case Op::Add: r = floating(a + b); return true;
    case Op::Sub: r = floating(a - b); return true;
    case Op::Mul: r = floating(a * b); return true;
    case Op::TrueDiv:
      if (b == 0.0) return false;  // Python raises (host_program._binary keeps IEEE only for stored floats)
      r = floating(a / b);
      return true;
    case Op::FloorDiv:
      if (b == 0.0) return false;
      r = floating(std::floor(a / b));
      return true;
    case Op::Mod:
      if (b == 0.0) return false;
      r = floating(std::fmod(a, b));
      return true;
    case Op::Min: r = floating(a <= b ? a : b); return true;
    case Op::Max: r = floating(a >= b ? a : b); return true;
    case Op::Lt: r = integer(a < b); return true;
    case Op::Le: r = integer(a <= b); return true;
    case Op::Gt: r = integer(a > b); return true;
    case Op::Ge: r = integer(a >= b); return true;
    case Op::Eq: r = integer(a == b); return true;
    case Op::Ne: r = integer(a != b); return true;
    default: return false;  // bitwise operations on floats: Python's error
  }
}

}  // namespace

bool eval_host(const Expr& e, const Values& v, bool want_float, int64_t& iout, double& fout) {
  if (e.integer_only) {
    int64_t r;
    if (!eval(e, v.syms, r)) return false;
    if (want_float) fout = static_cast<double>(r);
    else iout = r;
    return true;
  }
  Num st[kMaxExprStack];
  int n = 0;
  for (auto [op, x] : e.code) {
    switch (op) {
      case Op::Const: st[n++] = integer(x); continue;
      case Op::FConst: {
        double d;
        std::memcpy(&d, &x, sizeof d);
        st[n++] = floating(d);
        continue;
      }
      case Op::Sym: st[n++] = integer(v.syms[x]); continue;
      case Op::Arg: {
        PyObject* o = v.objs[x];
        if (PyFloat_CheckExact(o)) {
          st[n++] = floating(PyFloat_AS_DOUBLE(o));
        } else if (PyLong_CheckExact(o) || PyBool_Check(o)) {
          int64_t i;
          if (!read_i64(o, i)) return false;
          st[n++] = integer(i);
        } else {
          return false;
        }
        continue;
      }
      case Op::Cast:
        if (!cast(st[n - 1], x)) return false;
        continue;
      case Op::Neg:
      case Op::Abs:
        if (st[n - 1].f) {
          st[n - 1].d = op == Op::Neg ? -st[n - 1].d : std::fabs(st[n - 1].d);
        } else {
          if (st[n - 1].i == INT64_MIN) return false;
          if (op == Op::Neg || st[n - 1].i < 0) st[n - 1].i = -st[n - 1].i;
        }
        continue;
      case Op::Not: st[n - 1] = integer(!st[n - 1].truth()); continue;
      case Op::Ctlz:
      case Op::Cttz:
      case Op::Popc:
        if (st[n - 1].f) return false;  // the bits of a float: Python's int() of it, left to the Python call
        st[n - 1] = integer(bit_count(op, st[n - 1].i, x));
        continue;
      case Op::Select: {
        Num b = st[--n], a = st[--n];
        st[n - 1] = st[n - 1].truth() ? a : b;
        continue;
      }
      default: break;
    }
    const Num& b = st[--n];
    Num& a = st[n - 1];
    if (a.f || b.f || op == Op::TrueDiv) {
      Num r;
      if (!float_binary(op, a.as_double(), b.as_double(), r)) return false;
      a = r;
    } else if (!int_binary(op, a.i, b.i, a.i)) {  // in place: an integer stays one (no copy of a whole Num)
      return false;
    }
  }
  if (want_float) {
    fout = st[0].as_double();
  } else {
    if (st[0].f) return false;
    iout = st[0].i;
  }
  return true;
}

}  // namespace ww::py::fast_call
