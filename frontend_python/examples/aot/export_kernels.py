"""Exports two kernels for the C++ program of this folder (main.cpp): an fp16 elementwise add on a stream, and the
Ampere tensor-core GEMM of ../tensorop_gemm.py, as aot_add.{h,o} and aot_gemm.{h,o} in --out.

    python export_kernels.py --out build/exported [--arch sm_90a]

The kernels are compiled for --arch, else for the GPU of this machine, else for WARPWEAVE_ARCH, else sm_80; no GPU
is needed to export. A cubin runs on the GPU generation it was compiled for (sm_80: A100, sm_90a: H100/H200).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import warpweave as cutlass  # noqa: E402
import warpweave.cute as cute  # noqa: E402
from warpweave.cute.runtime import make_fake_compact_tensor, make_fake_stream  # noqa: E402

import tensorop_gemm  # noqa: E402
from elementwise_add import elementwise_add_kernel  # noqa: E402


@cute.jit
def add_on_stream(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream):
    """mC = mA + mB for row-major (M, N) tensors, launched on `stream`: 128 threads, each on 4 rows of 8 halves."""
    vector = 128 // mA.element_type.width
    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, vector), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)
    gA, gB, gC = (cute.zipped_divide(t, tiler_mn) for t in (mA, mB, mC))
    cC = cute.zipped_divide(cute.make_identity_tensor(mC.shape), tiler=tiler_mn)
    elementwise_add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1], block=[cute.size(tv_layout, mode=[0]), 1, 1], stream=stream)


def default_arch() -> str:
    from warpweave import _core

    try:
        if _core.driver_available() and _core.device_count() > 0:
            info = _core.device_info(_core.current_device())
            major, minor = info["compute_capability"]
            return f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    except (RuntimeError, KeyError, TypeError):
        pass
    return os.environ.get("WARPWEAVE_ARCH", "sm_80")


def export_all(out: str, arch: str) -> dict:
    """{name: (compiled function, header, object)} of the two exports."""
    os.makedirs(out, exist_ok=True)
    os.environ["WARPWEAVE_ARCH"] = arch
    # The add: row-major (M, N) halves, N a multiple of 8 (one 128-bit access), 16-byte aligned rows.
    rows = make_fake_compact_tensor(cutlass.Float16, (cute.sym_int(), cute.sym_int(divisibility=8)),
                                    stride_order=(1, 0), assumed_align=16)
    add = cute.compile(add_on_stream, rows, rows, rows, make_fake_stream())
    done = {"aot_add": (add, *add.export_to_c(file_path=out, file_name="aot_add", function_prefix="aot_add"))}
    # The GEMM: K-major A (M, K, L) and B (N, K, L), N-major C (M, N, L), fp16 in, fp32 accumulation, fp16 out.
    gemm = tensorop_gemm.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
    (_, compiled), = tensorop_gemm.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16,
                                                mnkl=(128, 128, 64, 2))
    done["aot_gemm"] = (compiled, *compiled.export_to_c(file_path=out, file_name="aot_gemm", function_prefix="aot_gemm"))
    return done


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="build/exported")
    p.add_argument("--arch", default=None)
    args = p.parse_args(argv)
    arch = args.arch or default_arch()
    for name, (_, header, obj) in export_all(args.out, arch).items():
        print(f"wrote {header} and {obj} ({arch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
