// The integer operations of the native fast path's programs (fast_call.hpp): grid expressions and host programs,
// with Python's integer semantics.
#pragma once

#include <cstdint>

namespace ww::py::fast_call {

// Grid expressions and the integer values of a host program (_dsl/host/host_program.py), in postfix form over
// symbol slots, with Python's integer semantics (floor // and %). Comparisons leave 0 or 1; Select takes
// (condition, then, else); Cast wraps to a width (operand: bits, plus 256 when signed; 0: to a Boolean).
// Host programs add floats (host_program_eval.cpp): Arg reads a scalar argument's number, FConst is a double's
// bits, TrueDiv divides as Python's /, and Cast with 512 + 32 or 64 converts to Float32 or Float64.
enum class Op : uint8_t { Const, Sym, Add, Sub, Mul, FloorDiv, Mod, Xor, Min, Max, Neg,
                          Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not, Abs, Select, Cast, Arg, FConst, TrueDiv };

// `a op b` on integers with Python's results (floor division and modulo); false where Python raises or the result
// leaves 64 bits. Inline: the evaluators call it for each operation (r may alias a).
[[gnu::always_inline]] inline bool int_binary(Op op, int64_t a, int64_t b, int64_t& r) {
  {
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
      case Op::Lt: r = a < b; break;
      case Op::Le: r = a <= b; break;
      case Op::Gt: r = a > b; break;
      case Op::Ge: r = a >= b; break;
      case Op::Eq: r = a == b; break;
      case Op::Ne: r = a != b; break;
      case Op::And: r = a & b; break;
      case Op::Or: r = a | b; break;
      default: return false;
    }
  }
  return true;
}

}  // namespace ww::py::fast_call
