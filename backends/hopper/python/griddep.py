"""primitives.griddepcontrol(action) (cutlass.experimental.primitives, as QuACK's kernels call it): programmatic
dependent launch, the wait for the grids this one depends on, or the signal that lets its dependents launch. The
same operations as cute.arch.griddepcontrol_wait / griddepcontrol_launch_dependents, which this backend's manifest
publishes; the action is experimental.primitives.GridDepAction (or its value)."""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext

_ACTIONS = {
    "wait": lambda: cute.arch.griddepcontrol_wait(),
    "launch_dependents": lambda: cute.arch.griddepcontrol_launch_dependents(),
}


def griddepcontrol(action, *, loc=None, ip=None):
    kind = getattr(action, "value", action)
    fn = _ACTIONS.get(kind) if isinstance(kind, str) else None
    if fn is None:
        raise ext.user_error(f"primitives.griddepcontrol: the action is GridDepAction.WAIT or LAUNCH_DEPENDENTS, got "
                             f"{action!r}", ext.DSLValueError)
    fn()


NAMES = ("griddepcontrol",)
