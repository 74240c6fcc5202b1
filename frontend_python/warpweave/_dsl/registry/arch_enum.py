"""`Arch` (CuTe DSL's cutlass.base_dsl.arch.Arch / cute.arch.Arch): the GPU targets by name, ordered so that
programs can compare them (`Arch.sm_100 <= arch <= Arch.sm_100f`: every sm_100 variant), and the target the
current compilation is for as one of them (`BaseDSL._get_dsl().get_arch_enum()`).

The order is by compute capability, then plain < "a" (arch-specific) < "f" (family-specific) of the same one.
These are names, not capabilities: what a target offers is its backend's manifest's to say."""
from __future__ import annotations

import enum
import functools

from ..base import trace
from ..base.errors import DSLValueError, user_location
from .target import select_target

# Compute capabilities by name; "a" variants exist from 9.0 on, "f" variants from 10.0 on (PTX ISA 8.8).
_CAPABILITIES = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)
_VARIANTS = ("", "a", "f")


def _members():
    out = []
    for cc in _CAPABILITIES:
        for v in _VARIANTS:
            if (v == "a" and cc < 90) or (v == "f" and cc < 100):
                continue
            out.append((f"sm_{cc}{v}", (cc, _VARIANTS.index(v))))
    return out


@functools.total_ordering
class Arch(enum.Enum):
    """A GPU target by name; members compare by (compute capability, variant)."""

    def __lt__(self, other):
        if not isinstance(other, Arch):
            return NotImplemented
        return self.value < other.value

    def __str__(self):
        return self.name

    @property
    def major(self) -> int:
        return self.value[0] // 10

    @property
    def minor(self) -> int:
        return self.value[0] % 10

    @property
    def compute_capability(self) -> int:
        return self.value[0]

    @classmethod
    def from_name(cls, name: str) -> "Arch":
        try:
            return cls[name.strip()]
        except KeyError:
            raise DSLValueError(f"Arch: no target is named {name!r} (e.g. sm_90a, sm_100a)", user_location(2)) \
                from None


Arch = Arch("Arch", _members(), type=None, module=__name__)  # noqa: F811 - the members are generated


def current_arch() -> Arch:
    """The target of the compilation being traced, else the one a compilation would be for now (WARPWEAVE_ARCH,
    else the current device's)."""
    st = trace.current_or_none()
    name = st.target["name"] if st is not None and st.target else select_target().name
    return Arch[name]


class BaseDSL:
    """CuTe DSL's cutlass_dsl.BaseDSL as programs use it: `BaseDSL._get_dsl()` is the DSL object of this process,
    whose get_arch_enum() is the target being compiled for (current_arch)."""

    _instance = None

    @classmethod
    def _get_dsl(cls) -> "BaseDSL":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_arch_enum(self) -> Arch:
        return current_arch()
