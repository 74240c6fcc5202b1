"""cute.copy with a plain tcgen05.ld / tcgen05.st atom (cute.make_copy_atom's) on the per-thread partitions of a tiled
copy of it (make_tmem_copy's partition_S / partition_D), as CuTe DSL programs write a copy inside a loop once the
partitions are made: the atom is arranged as make_tmem_copy arranges it (tmem.py: one instruction's register values
in order, this thread's offset within it), and that arranged atom copies, checking that the partitions are where
the instructions put their values."""
from __future__ import annotations

from warpweave import ext

from . import tmem


def _arranged(atom):
    w = atom.value_type.width
    if w not in (8, 16, 32):
        raise ext.user_error(f"cute.copy with {atom.manifest['id']}: tensor-memory copies move 32-bit columns of one "
                             f"32-bit value or of 2 16-bit or 4 8-bit ones, not {atom.value_type.__name__}",
                             ext.DSLTypeError)
    _, vals, thr32, lanes, cols = tmem._register_offsets(atom, 32 // w)
    return tmem._tmem_atom(atom, vals, lanes, cols, thr32)


def copy_with_plain_atom(atom, src, dst, *, pred=None, **kwargs):
    return _arranged(atom).__ww_copy__(src, dst, pred=pred, **kwargs)


ext.register_plain_atom_copy("tcgen05.Ld", copy_with_plain_atom)
ext.register_plain_atom_copy("tcgen05.St", copy_with_plain_atom)
