"""A kernel module whose own min shadows Python's (test_builtin_min_max: a user's min is called as written)."""
import warpweave as cutlass
import warpweave.cute as cute


def min(a, b):  # noqa: A001 - a user's own min shadows the builtin in this module
    return a + b


@cute.kernel
def shadow_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    gOut[0] = min(n, 1)                              # the module's min: n + 1


@cute.jit
def shadow(out, n: cutlass.Int32):
    shadow_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])
