"""The host side of a TVM FFI call without a GPU: the elementwise add (three 128 x 128 fp32 tensors) compiled with
--enable-tvm-ffi and called through the stand-in driver of tests/python/data/mock_libcuda.c, whose cuLaunchKernel
returns at once (WW_MOCK_QUIET). What it times is TVM FFI's argument passing, the entry's checks and conversion,
and the wrapper's packing: everything of a call but the driver's launch (bench_launch_overhead.py measures that
part and the whole on a GPU).

    python benchmarks/python/bench_tvm_ffi_host.py [--calls 100000]

It builds the stand-in driver with the C compiler and reruns itself with WARPWEAVE_LIBCUDA pointing at it.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import timeit

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))


def measure(calls: int) -> list:
    import tvm_ffi

    import elementwise_add as ew
    import warpweave as cutlass
    import warpweave.cute as cute
    from dsl_helpers import target
    from test_tvm_ffi import CudaLike
    from warpweave.cute.runtime import make_fake_compact_tensor

    with target("sm_80"):
        t = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(), cute.sym_int()), stride_order=(1, 0),
                                     assumed_align=16)
        f = cute.compile(ew.elementwise_add, t, t, t, options="--enable-tvm-ffi")
    a, b, c = (tvm_ffi.from_dlpack(CudaLike(1 << 32, (128, 128))) for _ in range(3))
    f(a, b, c)
    return [x / calls * 1e6 for x in timeit.repeat(lambda: f(a, b, c), number=calls, repeat=5)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=100000)
    args = p.parse_args(argv)
    if not os.environ.get("WW_MOCK_QUIET"):
        import aot_helpers

        with tempfile.TemporaryDirectory() as tmp:
            mock = aot_helpers.build_mock_driver(tmp)
            env = dict(os.environ, WW_MOCK_QUIET="1", WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"))
            return subprocess.run([sys.executable, __file__, "--calls", str(args.calls)], env=env).returncode
    us = measure(args.calls)
    print(f"TVM FFI call, host side (stand-in driver): median {sorted(us)[2]:.3f} us, best {min(us):.3f} us "
          f"per call over {args.calls} calls x 5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
