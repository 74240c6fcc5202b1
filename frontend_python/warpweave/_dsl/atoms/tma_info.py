"""cute.nvgpu.cpasync.TmaInfo: what building a bulk-tensor copy atom returns, as one object.

A program either unpacks it, `atom, tma_tensor = make_tiled_tma_atom(...)`, or keeps it and reads its fields in
the kernel it is passed to: `info.atom` (the copy atom), `info.tma_tensor` (the coordinate tensor the atom's
copies are partitioned over) and `info.smem_layout` (the shared-memory layout the atom was built for, as the
caller gave it, stages included). It holds no architecture knowledge: the backends that build such atoms fill it.
As a kernel argument it is walked like any object (the atom's per-call descriptor becomes a kernel parameter).
"""
from __future__ import annotations


class TmaInfo:
    """(atom, tma_tensor) with the shared-memory layout they were made for; unpacks as its first two fields."""

    _FIELDS = ("atom", "tma_tensor", "smem_layout")

    def __init__(self, atom, tma_tensor, smem_layout=None):
        self.atom = atom
        self.tma_tensor = tma_tensor
        self.smem_layout = smem_layout

    # `atom, tensor = ...` keeps working for the programs that unpack the pair.
    def __iter__(self):
        yield self.atom
        yield self.tma_tensor

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.atom, self.tma_tensor)[i]

    def replace(self, **fields) -> "TmaInfo":
        """A copy with some fields replaced (e.g. the atom as a kernel sees it)."""
        values = {k: getattr(self, k) for k in self._FIELDS}
        unknown = set(fields) - set(values)
        if unknown:
            raise TypeError(f"TmaInfo has no field {sorted(unknown)[0]!r} (fields: {', '.join(self._FIELDS)})")
        values.update(fields)
        return TmaInfo(**values)

    def __repr__(self):
        return f"TmaInfo(atom={self.atom!r}, tma_tensor={self.tma_tensor!r}, smem_layout={self.smem_layout!r})"
