"""`x in seq` and `x not in seq` in rewritten code: Python's test, except where x is a DSL number and seq a tuple,
list or range, which is decided at run time as x equals one of seq's elements (CuTe DSL's programs ask
`warpgroup_idx in self.cvt_warpgroup_ids` of a runtime index)."""
from __future__ import annotations

from ..values.numeric import Boolean, Numeric


def contains(item, container):
    if not isinstance(item, Numeric) or not isinstance(container, (tuple, list, range)):
        return item in container
    found = None
    for element in container:
        hit = item == element
        if not isinstance(hit, Numeric):     # a static comparison (an element no number equals)
            hit = Boolean(bool(hit))
        found = hit if found is None else found | hit
    return Boolean(False) if found is None else found
