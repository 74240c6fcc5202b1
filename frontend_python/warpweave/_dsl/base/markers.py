"""CuTe DSL's markers that need no machinery of their own here."""
from __future__ import annotations

import functools


def dynamic_expr(value):
    """Marks a condition as evaluated at run time. A condition that is a runtime value already becomes IR
    control flow (and a Python value folds, with the same result), so the marker returns its value."""
    return value


def dsl_user_op(fn):
    """Decorator of user helpers that CuTe DSL passes source locations to (`loc=`, `ip=` keywords). Tracing here
    records the user's line by itself; the helper is called as it is, with loc and ip left to their defaults."""
    @functools.wraps(fn)
    def op(*args, loc=None, ip=None, **kwargs):
        return fn(*args, **kwargs)
    return op


def accept_locations(namespace: dict, names) -> None:
    """Wraps the functions of `names` in a module's namespace with dsl_user_op: CuTe DSL passes loc= and ip= to them
    from its helpers, and tracing records the user's line itself."""
    for name in names:
        if callable(namespace[name]) and not isinstance(namespace[name], type):
            namespace[name] = dsl_user_op(namespace[name])


def accept_locations_in_class(cls, names=None) -> None:
    """The same for a class's methods (all its public ones and item access, or `names`): `t.load(loc=loc)`,
    `t[i, None]` through a library's wrapper that passes loc= and ip= on."""
    if names is None:
        names = [n for n in vars(cls) if not n.startswith("_")] + ["__getitem__", "__setitem__"]
    for name in names:
        fn = vars(cls).get(name)
        if isinstance(fn, type(accept_locations)):  # a plain function: not a property, staticmethod or class
            setattr(cls, name, dsl_user_op(fn))
