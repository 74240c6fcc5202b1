"""@cute.jit and @cute.kernel functions keep the identity of the function they decorate, as functools.wraps gives
it: name, qualified name, module, docstring, defaults, __wrapped__ (so inspect.getsource reads the original).
QuACK keys its compile cache and its epilogue fingerprints by module and qualified name, source and defaults."""
import inspect

import warpweave as cutlass
import warpweave.cute as cute


class Holder:
    @cute.jit
    def method(self, x: cutlass.Int32, scale: int = 2, *, shift: int = 3):
        """a method's doc"""
        return x


@cute.kernel
def kern(a: cute.Tensor):
    """a kernel's doc"""
    a[0] = 1


def test_decorated_functions_keep_the_functions_identity():
    def local():
        @cute.jit
        def inner(x: cutlass.Int32):
            return x
        return inner

    for f, qualname, doc in ((Holder.method, "Holder.method", "a method's doc"), (kern, "kern", "a kernel's doc"),
                             (local(), "test_decorated_functions_keep_the_functions_identity.<locals>.local."
                                       "<locals>.inner", None)):
        assert f.__qualname__ == qualname
        assert f.__module__ == __name__
        assert f.__doc__ == doc
        assert f.__name__ == qualname.rsplit(".", 1)[-1]
        assert "def " + f.__name__ in inspect.getsource(f)
    assert Holder.method.__defaults__ == (2,) and Holder.method.__kwdefaults__ == {"shift": 3}
    assert kern.__defaults__ is None and kern.__kwdefaults__ is None
