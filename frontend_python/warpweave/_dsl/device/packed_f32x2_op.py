"""cute.arch.calc_packed_f32x2_op and the NVVM packed f32x2 ops it is given (nvvm.add/sub/mul/fma_packed_f32x2).

CuTe DSL 4.8.1 builds its packed arithmetic as calc_packed_f32x2_op(a, b, c, calc_func): the pairs of Float32 are
packed, calc_func (one of NVVM's packed ops) makes the instruction, the result is unpacked. Libraries name that
form directly (QuACK makes its packed subtraction as partial(calc_packed_f32x2_op, calc_func=nvvm.sub_packed_f32x2)),
at import, on every target. Here each NVVM packed op names the cute.arch operation it stands for, and
calc_packed_f32x2_op makes that operation (device/arch.py: the target's backend primitive, sm_100 and later)."""
from __future__ import annotations

from ..base.errors import DSLNotImplementedError, DSLTypeError, user_location
from .arch import add_packed_f32x2, fma_packed_f32x2, mul_packed_f32x2, sub_packed_f32x2

_OPERATIONS = {f.__name__: f for f in (add_packed_f32x2, sub_packed_f32x2, mul_packed_f32x2, fma_packed_f32x2)}
_ARITY = {"add_packed_f32x2": 2, "sub_packed_f32x2": 2, "mul_packed_f32x2": 2, "fma_packed_f32x2": 3}


def _nvvm_op(name: str):
    def op(*args, **kwargs):
        raise DSLNotImplementedError(
            f"nvvm.{name} on IR vector values is not built here: pass it as calc_func to "
            f"cute.arch.calc_packed_f32x2_op, or call cute.arch.{name} with pairs of Float32", user_location(2))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"NVVM's {name}: the calc_func of cute.arch.calc_packed_f32x2_op that makes cute.arch.{name}."
    op._ww_packed_f32x2 = name
    return op


# what cutlass._mlir.dialects.nvvm offers under these names, on every target (the instruction is checked when used)
NVVM_OPS = {name: _nvvm_op(name) for name in _ARITY}


def calc_packed_f32x2_op(src_a, src_b, src_c, calc_func, *, result_type_inferred=False, rnd="rn", ftz=None,
                         loc=None, ip=None):
    """calc_func's packed operation on pairs (x, y) of Float32 (src_c: the addend of fma, else None), rounded as
    rnd says; the result is a pair of Float32. calc_func is one of nvvm.add/sub/mul/fma_packed_f32x2."""
    name = getattr(calc_func, "_ww_packed_f32x2", None)
    if name is None:
        raise DSLNotImplementedError(
            f"cute.arch.calc_packed_f32x2_op: calc_func is one of nvvm.add_packed_f32x2, sub_packed_f32x2, "
            f"mul_packed_f32x2 or fma_packed_f32x2 here, got {calc_func!r}", user_location(2))
    operands = (src_a, src_b) if src_c is None else (src_a, src_b, src_c)
    if len(operands) != _ARITY[name]:
        raise DSLTypeError(f"cute.arch.calc_packed_f32x2_op: nvvm.{name} takes {_ARITY[name]} operands "
                           f"(src_c {'is the addend' if _ARITY[name] == 3 else 'is None'}), got {len(operands)}",
                           user_location(2))
    return _OPERATIONS[name](*operands, rnd=rnd, ftz=ftz)
