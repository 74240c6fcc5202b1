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
// Shl and Shr shift as the host program does (a shift count outside [0, 64) for Shl, or negative for Shr, gives 0);
// ShlWrap is Shl whose value a conversion to at most 64 bits takes next (native_call.py writes it so): the bits a
// shift moves past 64 would be dropped by that conversion anyway, so it keeps the low 64 instead of refusing.
// Ctlz, Cttz and Popc count the bits of their operand's low x bits (x, 1 to 64, is the operation's operand) as
// unsigned. A fast divisor's set-up on the host (a persistent GEMM's tile scheduler, at each call) takes them: the
// shift from the divisor's leading zeros, the multiplier shifted into the packed value's high half.
enum class Op : uint8_t { Const, Sym, Add, Sub, Mul, FloorDiv, Mod, Xor, Min, Max, Neg,
                          Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not, Abs, Select, Cast, Arg, FConst, TrueDiv,
                          Shl, ShlWrap, Shr, Ctlz, Cttz, Popc };

// The unary operations that take their operand from the instruction (Cast: a type, the bit counts: a width).
inline bool is_bit_count(Op op) { return op == Op::Ctlz || op == Op::Cttz || op == Op::Popc; }

// A bit count of the low `bits` bits of v (1 <= bits <= 64) read as unsigned, as the host program's Python does.
[[gnu::always_inline]] inline int64_t bit_count(Op op, int64_t v, int64_t bits) {
  uint64_t u = static_cast<uint64_t>(v);
  if (bits < 64) u &= (uint64_t{1} << bits) - 1;
  if (op == Op::Popc) return __builtin_popcountll(u);
  if (u == 0) return bits;
  return op == Op::Ctlz ? __builtin_clzll(u) - (64 - bits) : __builtin_ctzll(u);
}

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
      case Op::Shl: {  // Python's exact shift, refused where it leaves 64 bits
        if (b < 0 || b >= 64) {
          r = 0;
          break;
        }
        __int128 t = static_cast<__int128>(a) * (static_cast<__int128>(1) << b);
        if (t > INT64_MAX || t < INT64_MIN) return false;
        r = static_cast<int64_t>(t);
        break;
      }
      case Op::ShlWrap:
        r = (b < 0 || b >= 64) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
        break;
      case Op::Shr:  // Python's shift: towards minus infinity
        r = b < 0 ? 0 : b >= 63 ? (a < 0 ? -1 : 0) : (a >> b);
        break;
      default: return false;
    }
  }
  return true;
}

}  // namespace ww::py::fast_call
