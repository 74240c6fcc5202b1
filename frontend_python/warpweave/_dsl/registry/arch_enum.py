"""`Arch`: CuTe DSL's enumeration of GPU architectures (`cutlass.base_dsl.arch.Arch`), made of what the loaded
backends' manifests say, so that the frontend names no generation itself.

Each manifest target gives its compute capability's plain name (`sm_90`), its arch-specific name where the target
is one (`sm_90a`), the plain names of the capabilities it also serves (`sm_86`), and, for arch-specific targets of
capability 100 and later, the family name (`sm_100f`): CUDA's rule for family-specific code, which runs on every
later minor version of the same major one (PTX ISA 8.8). Members order by compute capability, then plain <
arch-specific < family, which is what `arch < Arch.sm_90` and `arch >= Arch.sm_100` in library code test.
`is_family_of(Arch.sm_100f)` holds for the capabilities of that family. The current one is the target code is
generated for (`BaseDSL._get_dsl().get_arch_enum()`, target.select_target()).
"""
from __future__ import annotations

import enum
import functools
import re

from ..base.errors import DSLValueError, user_location
from .plugins import registry
from .target import select_target

_NAME = re.compile(r"^sm_(\d+)([af]?)$")
_SUFFIX_RANK = {"": 0, "a": 1, "f": 2}


class _ArchBase(enum.Enum):
    """Members' values are (compute capability, suffix rank) pairs; comparisons follow them."""

    @property
    def major(self) -> int:
        return self.value[0] // 10

    @property
    def minor(self) -> int:
        return self.value[0] % 10

    @property
    def compute_capability(self) -> int:
        return self.value[0]

    @property
    def suffix(self) -> str:
        return _NAME.match(self.name).group(2)

    def is_family_of(self, other) -> bool:
        """True when code for `other` (a family name, e.g. Arch.sm_100f) runs on this architecture: the same major
        version and a minor version not below it."""
        if not isinstance(other, _ArchBase):
            raise DSLValueError(f"is_family_of takes an Arch, got {other!r}", user_location(2))
        if other.suffix != "f":
            return self.compute_capability == other.compute_capability
        return self.major == other.major and self.minor >= other.minor

    def _cmp(self, other):
        if not isinstance(other, _ArchBase):
            return NotImplemented
        return (self.value > other.value) - (self.value < other.value)

    def __lt__(self, other):
        c = self._cmp(other)
        return c if c is NotImplemented else c < 0

    def __le__(self, other):
        c = self._cmp(other)
        return c if c is NotImplemented else c <= 0

    def __gt__(self, other):
        c = self._cmp(other)
        return c if c is NotImplemented else c > 0

    def __ge__(self, other):
        c = self._cmp(other)
        return c if c is NotImplemented else c >= 0

    @classmethod
    def from_name(cls, name: str):
        """The member named `name` (e.g. "sm_90a"); a name no loaded backend's target has is an error."""
        try:
            return cls[name.strip()]
        except KeyError:
            raise DSLValueError(f"Arch: no target is named {name!r} (e.g. sm_90a, sm_100a)", user_location(2)) \
                from None

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"Arch.{self.name}"


def _member_names() -> list:
    names = set()
    for t in registry.targets():
        cc = t.compute_capability
        names.add(f"sm_{cc}")
        for other in t.also_serves:
            names.add(f"sm_{other}")
        if t.arch_specific:
            names.add(f"sm_{cc}a")
            if cc >= 100:
                names.add(f"sm_{cc}f")
        m = _NAME.match(t.name)
        if m is not None:
            names.add(t.name)
    return sorted(names, key=lambda n: (int(_NAME.match(n).group(1)), _SUFFIX_RANK[_NAME.match(n).group(2)]))


@functools.lru_cache(maxsize=1)
def arch_enum():
    """The Arch enumeration of the loaded backends (built once)."""
    members = {n: (int(_NAME.match(n).group(1)), _SUFFIX_RANK[_NAME.match(n).group(2)]) for n in _member_names()}
    return _ArchBase("Arch", members)


def current_arch():
    """The Arch member of the target code is generated for."""
    name = select_target().name
    arch = arch_enum()
    try:
        return arch[name]
    except KeyError:
        raise DSLValueError(f"the target {name} has no Arch member", user_location(2)) from None
