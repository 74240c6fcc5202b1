"""What the Ampere backend registers with warpweave when it loads (see the package's docstring)."""
from warpweave import ext


def _mma_fp8_op():
    base = ext.manifest_class("warp.MmaF8Op")
    if base is None:
        return None

    class MmaFP8Op(base):
        """mma.sync with fp8 inputs (sm_89 and later), as CuTe DSL names it: MmaFP8Op(ab_dtype, acc_dtype,
        shape_mnk), A and B of one type (E4M3 or E5M2); the manifest's warp.MmaF8Op takes the two types apart."""

        def __init__(self, ab_dtype, acc_dtype, shape_mnk):
            super().__init__(ab_dtype, ab_dtype, acc_dtype, shape_mnk)
            self.ab_dtype = ab_dtype

    return MmaFP8Op


_fp8 = _mma_fp8_op()
if _fp8 is not None:
    ext.register_python_name("warp.MmaFP8Op", _fp8)

# cutlass.experimental.primitives: the names whose signature is not their instruction's operand list
from . import primitives as _primitives  # noqa: E402

for _name, _f in _primitives.NAMES.items():
    ext.register_python_name(f"primitives.{_name}", _f)

# saturating integer packing (python/integer_pack.py)
from . import integer_pack as _integer_pack  # noqa: E402

ext.register_python_name("primitives.convert_and_pack_integer", _integer_pack.convert_and_pack_integer)

# cute.arch: the names whose CuTe DSL signature adapts onto this backend's entries
from . import arch_ops as _arch_ops  # noqa: E402

for _name, _f in _arch_ops.NAMES.items():
    ext.register_python_name(f"arch.{_name}", _f)

# cute.nvgpu.CacheEvictionPriority (also cute.nvgpu.common's): global accesses with an L1 eviction priority
from . import cache_eviction as _cache_eviction  # noqa: E402

for _home in ("nvgpu", "common"):
    ext.register_python_name(f"{_home}.CacheEvictionPriority", _cache_eviction.CacheEvictionPriority)

# cute.nvgpu's global loads and stores with a memory order (and cute.nvgpu.common's enums of orders and scopes)
from . import ordered_copy as _ordered_copy  # noqa: E402

for _name, _obj in _ordered_copy.NAMES.items():
    ext.register_python_name(f"nvgpu.{_name}", _obj)
    ext.register_python_name(f"common.{_name}", _obj)

# cutlass._mlir.dialects.nvvm: the NVVM ops every generation from sm_80 has (atomicrmw, fmax, fmin), seen by the
# backends that build on this one too
from . import nvvm_ops as _nvvm_ops  # noqa: E402

for _name in _nvvm_ops.NAMES:
    ext.register_python_name(f"nvvm.{_name}", getattr(_nvvm_ops, _name))

# cute.arch's integer instructions without a generic LLVM form (bfe, bfi, bfind, mul24, mad24, saturating add and
# subtract, carry chains) and its half-precision arithmetic (packed f16x2/bf16x2 add, sub, fma, exp2; scalar fma)
from . import integer_isa as _integer_isa, packed_half as _packed_half  # noqa: E402

for _module in (_integer_isa, _packed_half):
    for _name, _f in _module.NAMES.items():
        ext.register_python_name(f"arch.{_name}", _f)
