"""tcgen05.Cp4x32x128bOp's copy atom copying by itself: cute.copy(atom, src, dst) (cute.experimental.copy(src, dst,
copy_atom=atom)) of the scale factors a tile holds, shared memory to tensor memory, as the tiled copy of
make_s2t_copy does. Its operands are the whole tensors (filter_zeros of the blockscaled_layout layouts), or their
partition by the tiled copy's (thread, value) layouts and tile (one tile, thread 0: the whole tensor in its own
modes, a trailing mode of tiles of one)."""
from __future__ import annotations

import functools

import warpweave.cute as cute
from warpweave import ext

from .tmem import S2TScaleCopy


def _whole(t):
    """A partition (values, tiles) of one tile as its values' tensor; a tensor of the blocks as it is."""
    shape = t.shape if isinstance(t.shape, tuple) else (t.shape,)
    if len(shape) == 2 and isinstance(shape[0], tuple) and cute.size(t, mode=[1]) == 1:
        t = t[(None, 0)]
    lay = ext.full_layout(t)
    while isinstance(lay.shape, tuple) and len(lay.shape) == 1 and isinstance(lay.shape[0], tuple):
        lay = cute.make_layout(lay.shape[0], stride=lay.stride[0])   # the values' mode, one level up
    return cute.make_tensor(t.iterator, lay) if lay is not ext.full_layout(t) else t


def copy_scale_factors(atom, src, dst, *, pred=None, **kwargs):
    copy = S2TScaleCopy(atom)
    src, dst = _whole(src), _whole(dst)
    copy.__ww_copy__(copy.partition_S(src), copy.partition_D(dst), pred=pred, **kwargs)


def op_class():
    """The op class whose atoms copy themselves (None where no manifest has the op)."""
    base = ext.manifest_class("tcgen05.Cp4x32x128bOp")
    if base is None:
        return None

    class Cp4x32x128bOp(base):
        """tcgen05.cp .32x128b.warpx4 of 8-bit block scale factors: Cp4x32x128bOp(cta_group)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._ww_args = (args, kwargs)

        def __ww_make_copy_atom__(self, value_type, num_bits_per_copy=None):
            args, kwargs = self._ww_args
            atom = cute.make_copy_atom(base(*args, **kwargs), value_type, num_bits_per_copy=num_bits_per_copy)
            atom.__ww_copy__ = functools.partial(copy_scale_factors, atom)
            return atom

    return Cp4x32x128bOp
