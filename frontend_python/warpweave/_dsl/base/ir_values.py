"""User code's access to the IR being traced: MLIR types and SSA values as CuTe DSL's `cutlass._mlir.ir` has them.

The IR is the MLIR text the core's builder writes (trace.py): a value is an SSA id with a type string. `Type` and
`Value` are that, as objects: a Type is its MLIR spelling (`i32`, `vector<4xf32>`, `!llvm.struct<(i32, i32)>`), the
subclasses (IntegerType, F32Type, VectorType, ...) read it; a Value is an id of one trace, with its type. A value
belongs to the kernel trace that made it: used in another trace, after its trace ended, or on the host, it is a
DSL error at the user's line instead of a dangling SSA name in the module text (frontend_python/DESIGN.md, "IR
access"). `emit` is the one door to the builder for user-visible ops: it turns the builder's refusals (a value not
visible in the current region) into DSL errors too.
"""
from __future__ import annotations

import re

from . import trace
from .errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location

_INT = re.compile(r"^i(\d+)$")
_VECTOR = re.compile(r"^vector<((?:\d+x)+)(.+)>$")
_STRUCT = re.compile(r"^!llvm\.struct<\((.*)\)>$")
_POINTER = re.compile(r"^!llvm\.ptr(?:<(\d+)>)?$")
_ARRAY = re.compile(r"^!llvm\.array<(\d+) x (.+)>$")
_FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32}
# MLIR's small float types, as the builder spells them (a user op may name them; NVPTX keeps them in integers).
_SMALL_FLOATS = {"f8E4M3FN", "f8E5M2", "f8E4M3", "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E3M4", "f8E8M0FNU",
                 "f6E2M3FN", "f6E3M2FN", "f4E2M1FN"}
_MAX_INT_WIDTH = 1 << 16


def _is_scalar(text: str) -> bool:
    m = _INT.match(text)
    if m:
        return not m.group(1).startswith("0") and 1 <= int(m.group(1)) <= _MAX_INT_WIDTH
    return text == "index" or text in _FLOAT_WIDTHS or text in _SMALL_FLOATS


def well_formed(text: str) -> bool:
    """Whether `text` spells a type of the IR user ops write: a scalar (iN, index, the floats), a fixed-length
    vector of scalars, an LLVM pointer, literal struct or array of these. Anything else would reach the module
    text as written (MLIR's parser, not the user's line, would refuse it), and NVPTX has no scalable vectors."""
    if _is_scalar(text) or _POINTER.match(text):
        return True
    m = _VECTOR.match(text)
    if m:
        dims = m.group(1).split("x")[:-1]
        return all(d.isdigit() and int(d) > 0 for d in dims) and _is_scalar(m.group(2))
    m = _STRUCT.match(text)
    if m:
        body = m.group(1)
        return _balanced(body) and all(well_formed(t) for t in _split_top(body))
    m = _ARRAY.match(text)
    if m:
        return int(m.group(1)) > 0 and well_formed(m.group(2))
    return False


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        if depth < 0:
            return False
    return depth == 0


def _split_top(text: str) -> list[str]:
    """`a, b<c, d>, e` -> [a, b<c, d>, e]: the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class Type:
    """An MLIR type, held as its spelling. Subclasses cast (`IntegerType(t)`) and test (`IntegerType.isinstance(t)`)
    as MLIR's Python classes do."""
    __slots__ = ("text",)

    def __init__(self, t):
        text = t.text if isinstance(t, Type) else t
        if not isinstance(text, str) or not text.strip():
            raise DSLTypeError(f"an MLIR type is made from a type or its spelling, got {t!r}", user_location(2))
        text = text.strip()
        if not isinstance(t, Type) and not well_formed(text):
            raise DSLValueError(f"{text!r} is not a type of the IR user ops write: integers i1..i65536, index, "
                                "floats (f16, bf16, f32, f64, tf32, f8E4M3FN, ...), vector<NxT> of those, "
                                "!llvm.ptr<space>, !llvm.struct<(T, ...)> and !llvm.array<N x T>", user_location(2))
        if type(self) is not Type and not type(self)._matches(text):
            raise DSLValueError(f"cannot cast type {text} to {type(self).__name__}", user_location(2))
        self.text = text

    @classmethod
    def _matches(cls, text: str) -> bool:
        return True

    @classmethod
    def isinstance(cls, t) -> bool:
        return isinstance(t, Type) and cls._matches(t.text)

    @staticmethod
    def parse(text: str, context=None) -> "Type":
        return Type(text)

    def __eq__(self, other):
        return isinstance(other, Type) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"Type({self.text})"


class IntegerType(Type):
    __slots__ = ()

    @classmethod
    def _matches(cls, text):
        return _INT.match(text) is not None

    @staticmethod
    def get_signless(width: int, context=None) -> "IntegerType":
        if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 1 << 16:
            raise DSLValueError(f"an integer type's width is 1..65536, got {width!r}", user_location(2))
        return IntegerType(f"i{width}")

    @property
    def width(self) -> int:
        return int(_INT.match(self.text).group(1))

    @property
    def is_signless(self) -> bool:
        return True


class FloatType(Type):
    __slots__ = ()
    _spelling = ""

    @classmethod
    def _matches(cls, text):
        return text == cls._spelling if cls._spelling else text in _FLOAT_WIDTHS

    @classmethod
    def get(cls, context=None):
        return cls(cls._spelling)

    @property
    def width(self) -> int:
        return _FLOAT_WIDTHS[self.text]


class F16Type(FloatType):
    __slots__ = ()
    _spelling = "f16"


class BF16Type(FloatType):
    __slots__ = ()
    _spelling = "bf16"


class F32Type(FloatType):
    __slots__ = ()
    _spelling = "f32"


class F64Type(FloatType):
    __slots__ = ()
    _spelling = "f64"


class IndexType(Type):
    __slots__ = ()

    @classmethod
    def _matches(cls, text):
        return text == "index"

    @staticmethod
    def get(context=None):
        return IndexType("index")


class VectorType(Type):
    __slots__ = ()

    @classmethod
    def _matches(cls, text):
        return _VECTOR.match(text) is not None

    @staticmethod
    def get(shape, element_type, scalable=None, scalable_dims=None, loc=None, context=None) -> "VectorType":
        shape = list(shape)
        if scalable or scalable_dims:
            raise DSLValueError("scalable vectors do not exist on GPUs", user_location(2))
        if not shape or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in shape):
            raise DSLValueError(f"a vector's shape is positive integers, got {shape!r}", user_location(2))
        elem = Type(element_type)
        if not (IntegerType.isinstance(elem) or FloatType.isinstance(elem) or IndexType.isinstance(elem)):
            raise DSLTypeError(f"a vector holds integers, floats or indices, not {elem}", user_location(2))
        return VectorType("vector<" + "".join(f"{n}x" for n in shape) + elem.text + ">")

    @property
    def shape(self) -> list:
        return [int(n) for n in _VECTOR.match(self.text).group(1).split("x")[:-1]]

    @property
    def element_type(self) -> Type:
        return Type(_VECTOR.match(self.text).group(2))

    @property
    def rank(self) -> int:
        return len(self.shape)


class StructType(Type):
    """LLVM's literal struct (`!llvm.struct<(i32, f32)>`): what an inline asm op of several results returns."""
    __slots__ = ()

    @classmethod
    def _matches(cls, text):
        return _STRUCT.match(text) is not None

    @staticmethod
    def get_literal(elements, *, packed=False, context=None) -> "StructType":
        if packed:
            raise DSLValueError("packed LLVM structs are not supported: inline asm results are unpacked",
                                user_location(2))
        return StructType("!llvm.struct<(" + ", ".join(Type(e).text for e in elements) + ")>")

    @property
    def body(self) -> list:
        return [Type(t) for t in _split_top(_STRUCT.match(self.text).group(1))]


class PointerType(Type):
    """LLVM's opaque pointer (`!llvm.ptr<N>`, N the address space: 1 global, 3 shared, 7 a cluster's shared)."""
    __slots__ = ()

    @classmethod
    def _matches(cls, text):
        return _POINTER.match(text) is not None

    @staticmethod
    def get(address_space: int = 0, context=None) -> "PointerType":
        if isinstance(getattr(address_space, "value", None), int) and not isinstance(address_space, int):
            address_space = address_space.value   # an address-space enumeration (cute.AddressSpace.generic)
        if isinstance(address_space, bool) or not isinstance(address_space, int) or address_space < 0:
            raise DSLValueError(f"llvm.PointerType.get: an address space is an int >= 0, got {address_space!r}",
                                user_location(2))
        return PointerType("!llvm.ptr" if address_space == 0 else f"!llvm.ptr<{address_space}>")

    @property
    def address_space(self) -> int:
        n = _POINTER.match(self.text).group(1)
        return int(n) if n else 0


_PTR = re.compile(r"^!llvm\.ptr(?:<(\d+)>)?$")
# Address spaces whose pointers are 32-bit: shared, constant, local, tensor memory, shared::cluster (the compiler
# makes shared-window pointers short, as nvcc does: nvptx_codegen.cpp); generic and global ones are 64-bit.
_SHORT_ADDRESS_SPACES = {3, 4, 5, 6, 7}


def bit_width(t: Type) -> int | None:
    """The width of a scalar integer, float or pointer type; None for others."""
    if IntegerType.isinstance(t):
        return IntegerType(t).width
    if FloatType.isinstance(t):
        return FloatType(t).width
    m = _PTR.match(t.text)
    if m is not None:
        return 32 if int(m.group(1) or 0) in _SHORT_ADDRESS_SPACES else 64
    return None


class Value:
    """An SSA value of the kernel being traced, with its type. It remembers its trace and kernel: one trace state
    holds a module's kernels one after another, and an id of one kernel means nothing in the next."""
    __slots__ = ("id", "type", "constant", "_state", "_kernel")

    def __init__(self, value_id, ty: Type = None, state=None, constant=None):
        if isinstance(value_id, Value):  # ir.Value(v), as a subclass of a user's wraps a value (MLIR's cast)
            v = value_id
            self.id, self.type, self.constant, self._state, self._kernel = v.id, v.type, v.constant, v._state, \
                v._kernel
            if isinstance(v, HostIRValue) or host_number(v) is not None:
                if not hasattr(self, "__dict__"):
                    raise DSLTypeError("ir.Value(v) of a value of the host side: use v itself", user_location(2))
                self.__dict__["number"] = v.number  # what host ops compute with (host_number)
            return
        self.id = int(value_id)
        self.type = ty
        self.constant = constant  # the Python value of a constant the DSL made; None if not known here
        self._state = state
        self._kernel = state.kernel

    def use(self) -> int:
        """The SSA id, once checked to belong to the kernel now being traced."""
        st = trace.current_or_none()
        if st is None or st.kernel is None:
            raise DSLRuntimeError(f"an IR value ({self.type}) is used outside a kernel: IR values exist only inside "
                                  "the @cute.kernel trace that made them", user_location(3))
        if st is not self._state or st.kernel is not self._kernel:
            raise DSLRuntimeError(f"an IR value ({self.type}) is used in another kernel or trace than the one that "
                                  "made it (kept from an earlier compilation?)", user_location(3))
        return self.id

    def __repr__(self):
        return f"Value(%{self.id} : {self.type})"

    def __bool__(self):
        # An object is true to Python: `x and y` or `bool(v)` of an IR value would decide at trace time, silently.
        raise DSLTypeError(f"an IR value ({self.type}) has no Python truth value: it is known only when the kernel "
                           "runs. Use it as the condition of an if/while (a runtime branch), or make it a DSL number "
                           "(cutlass.Boolean(v)) first", user_location(2))


class HostIRValue(Value):
    """The IR form of a number of a @cute.jit function's host side (`x.ir_value()` outside a kernel on a runtime
    extent or argument): host code is a program the compiled function runs at each call (host/host_program.py),
    so the ops written on it that the program has (HOST_OPS) are computed there; anything else is an error."""
    __slots__ = ("number",)

    def __init__(self, number, ty: Type):
        self.id, self.type, self.constant, self._state, self._kernel = -1, ty, None, None, None
        self.number = number

    def use(self) -> int:
        raise DSLRuntimeError(f"an IR value of the host side ({self.type}) is used in device code: pass the number "
                              "to the kernel instead", user_location(3))

    def __repr__(self):
        return f"HostValue({self.number!r} : {self.type})"

    def __ww_int__(self):
        """An integer of the host side as the layout algebra takes it (an extent a JitArgument's struct holds)."""
        to_int = getattr(self.number, "__ww_int__", None)
        if to_int is None:
            raise TypeError(f"a value of the host side of type {self.type} is not an integer")
        return to_int()


def host_number(v):
    """The number a value of the host side stands for (a HostIRValue, or a user's ir.Value made of one), else
    None (for anything else too)."""
    if isinstance(v, HostIRValue):
        return v.number
    return getattr(v, "__dict__", {}).get("number") if isinstance(v, Value) and v.id == -1 else None


# op name -> fn(operands (HostIRValue), result types, properties) -> [results]: the IR ops host code may write,
# computed by the host program. Set by the host layer (host/host_ir.py) at its import.
HOST_OPS: dict = {}


def wrap(value_id: int, ty=None, constant=None) -> Value:
    """A Value for an SSA id of the kernel now traced (its type read from the builder unless given)."""
    st = trace.current()
    t = Type.__new__(Type)
    t.text = ty.text if isinstance(ty, Type) else (ty if ty is not None else st.builder.type_of(value_id))
    return Value(value_id, t, st, constant)


def operand(x, what: str = "an operand") -> Value:
    """x as a Value: a Value, or anything with `ir_value()` (the DSL's numbers), which mixes DSL values into ops."""
    if isinstance(x, Value):
        return x
    to_ir = getattr(x, "ir_value", None)
    if callable(to_ir):
        v = to_ir()
        if isinstance(v, Value):
            return v
    raise DSLTypeError(f"{what} must be an IR value (ir.Value) or a DSL number, got {type(x).__name__} {x!r}",
                       user_location(3))


def emit(name: str, operands, result_types, properties: str = "", num_regions: int = 0) -> list:
    """Writes one op (taking the last `num_regions` regions closed); its results as Values. Builder refusals become
    DSL errors at the user's line."""
    where = user_location(2)
    ops = [operand(o) for o in operands]
    if any(host_number(o) is not None for o in ops):
        fn = HOST_OPS.get(name)
        if fn is None:
            raise DSLTypeError(f"{name} on a value of the host side: host code computes only "
                               f"{', '.join(sorted(HOST_OPS))} on IR values; write it with the DSL's numbers, or "
                               "in the kernel", where)
        return fn(ops, [Type(t) for t in result_types], properties, where)
    ids = [o.use() for o in ops]
    b = trace.builder()
    texts = [Type(t).text for t in result_types]
    try:
        out = b.op(name, ids, texts, properties, "", num_regions)
    except ValueError as e:  # _core.IRError: e.g. a value defined in a region that has closed
        raise DSLValueError(f"{name}: {e}", where) from None
    return [wrap(v, t) for v, t in zip(out, texts)]


class Location:
    """Where an op comes from. The IR's locations are the user's lines, which the DSL tracks itself, so a Location
    passed as `loc=` changes nothing; these constructors exist for code that makes one."""
    __slots__ = ("filename", "line")

    def __init__(self, filename=None, line=None):
        self.filename, self.line = filename, line

    @staticmethod
    def unknown(context=None):
        return Location()

    @staticmethod
    def file(filename, line, col=0, context=None):
        return Location(filename, line)

    @staticmethod
    def current():
        where = user_location(2)
        return Location(*where) if where else Location()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
