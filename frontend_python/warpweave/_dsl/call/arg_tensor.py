"""Argument kinds that pass memory: a tensor (a from_dlpack view, or a torch tensor passed directly), a pointer
(make_ptr) and a list or tuple of tensors or numbers (each element an argument of its own). See arg_kind.py."""
from __future__ import annotations

import inspect

from ... import _core
from ..base.errors import DSLNotImplementedError, DSLTypeError, DSLValueError, user_location
from ..values.runtime import runtime_view
from ..values.numeric import Numeric
from ..values.runtime import AddressSpace, RuntimePointer, RuntimeTensor, SymbolicInt, is_torch_tensor, satisfies
from ..values.tensor import GMEM, Pointer, Tensor
from ..values.layout_annotations import compiles_numbers_in
from ..values.user_numeric import storage_name
from .arg_kind import (NATIVE_POINTER, NATIVE_TENSOR, NATIVE_TREE, ArgPlan, CArg, fast_id, keyed_by_value, sym_id,
                       tvm_value)

# DLPack's (code, bits) of each element type (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6, and
# DLPack 1.1's narrow floats: kDLFloat8_e4m3 8, kDLFloat8_e4m3fn 10, _e5m2 12, _e8m0fnu 14, kDLFloat6_e2m3fn 15,
# _e3m2fn 16, kDLFloat4_e2m1fn 17).
DL_DTYPE = {"Int8": (0, 8), "Int16": (0, 16), "Int32": (0, 32), "Int64": (0, 64), "Uint8": (1, 8),
            "Uint16": (1, 16), "Uint32": (1, 32), "Uint64": (1, 64), "Float16": (2, 16), "Float32": (2, 32),
            "Float64": (2, 64), "BFloat16": (4, 16), "Boolean": (6, 8), "Float8E4M3FN": (10, 8),
            "Float8E5M2": (12, 8), "Float8E8M0FNU": (14, 8), "Float6E2M3FN": (15, 6), "Float6E3M2FN": (16, 6),
            "Float4E2M1FN": (17, 4), "Float8E4M3": (8, 8)}
# Types torch exports two to a lane-pair element (float4_e2m1fn_x2: code 17, bits 4, lanes 2, its shape and strides
# counting bytes): taken too, their contiguous mode's extent doubled and the other strides with it.
DL_PAIRED = {"Float4E2M1FN"}


def torch_key(dtype, ptr, strides):
    """What the specialisation of a torch tensor's dynamic view depends on (runtime_view), or finer: its dtype,
    its address's low bits (its alignment up to 16 bytes) and, per mode, whether the stride is 1 (-1) or else its
    lowest set bit (its power-of-two divisor). Finer keys only cost a check more."""
    return (dtype, ptr & 15, *[-1 if x == 1 else x & -x for x in strides])


class SpecialisationMiss(DSLValueError):
    """A tensor of the compiled function's declared layout whose run-time extents, strides or address divide less
    than the compiled ones did: what the compile speculated on, not what the program declared. The compiled
    function compiles again for such a call (compiled_function.py), as CuTe DSL's runs any tensor of the layout."""


def _declared_alike(spec, compiled) -> bool:
    """The same element type and the same static extents and strides where the compiled specialisation has them
    (a run-time one there may be anything)."""
    if spec[0] != compiled[0] or spec[1] != compiled[1] or len(spec[2]) != len(compiled[2]):
        return False
    return all(isinstance(theirs, tuple) or mine == theirs
               for mine, theirs in zip(spec[2] + spec[3], compiled[2] + compiled[3]))


def spec_mismatch(plan, rt):
    sp = rt.spec()
    error = SpecialisationMiss if _declared_alike(sp, plan.spec) else DSLValueError
    raise error(f"argument '{plan.name}' does not match the compiled specialisation: compiled for {plan.spec}, "
                f"called with {sp}; call the @cute.jit function itself to compile for these arguments", None)


def torch_check(plan, tensor, compiled_spec, ok, key):
    """A torch tensor of a key not seen yet: its view checked against the compiled specialisation as the general
    path checks it (an error if it does not match); a match is remembered for the key."""
    t = runtime_view(tensor)
    sp = t.spec()
    if sp != compiled_spec and not satisfies(sp, compiled_spec):
        spec_mismatch(plan, t)
    ok[key] = True


def fake_tensor_error(plan):
    raise DSLValueError(f"argument '{plan.name}' is a fake tensor (make_fake_tensor): it can be compiled for but not "
                        "run on", None)


def view_or_error(plan, v):
    """The view of a tensor argument of the fast path, or the general path's error for a non-tensor."""
    rt = runtime_view(v)
    if rt is None:
        raise DSLTypeError(f"argument '{plan.name}' must be a tensor, got {type(v).__name__}", None)
    return rt


def _spec_text(modes) -> str:
    return "(" + ", ".join(f"?{'' if m[1] == 1 else f'(div {m[1]})'}" if isinstance(m, tuple) else str(m)
                           for m in modes) + ")"


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


class TensorArg(ArgPlan):
    """A tensor: its address, and a symbol per dynamic extent and stride."""

    kind = "tensor"
    native_code = NATIVE_TENSOR

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return runtime_view(value) is not None

    @classmethod
    def spec_key(cls, value, annotation):
        return runtime_view(value).spec()

    @classmethod
    def cache_key(cls, value, annotation, stable) -> str:
        return repr(runtime_view(value).spec())

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        rt = runtime_view(value)
        plan = cls(index, name, rt.spec_declared() if st.declared_facts_only else rt.spec(), rt.element_type)
        shape, stride = [], []
        cosize = 1 + sum((s - 1) * abs(d) for s, d in zip(rt.shape, rt.stride))
        wide = cosize >= (1 << 31) if rt.index_bits is None else rt.index_bits == 64
        if wide and rt.use_32bit_stride:
            raise DSLValueError(f"argument '{name}': use_32bit_stride=True, but the tensor spans {cosize} elements, "
                                "more than 32-bit strides can index", user_location(4))
        for what, values, dynamic, out, spec_modes in (("shape", rt.shape, rt.dynamic_shape, shape, plan.spec[2]),
                                                       ("stride", rt.stride, rt.dynamic_stride, stride,
                                                        plan.spec[3])):
            for k, (x, dyn) in enumerate(zip(values, dynamic)):
                if not dyn:
                    out.append(x)
                    continue
                if what == "stride":
                    bits = 64 if wide else 32
                else:  # an extent is 32-bit (as in CuTe DSL) unless declared 64-bit or too large for 32 bits
                    bits = rt.shape_bits[k] or (64 if abs(x) >= 1 << 31 else 32)
                sym = st.new_host_symbol(index, (what, k), bits, spec_modes[k][1], f"{name}.{what}[{k}]")
                plan.symbols.append((sym_id(sym), what, k))
                if rt.device != "fake":
                    st.host_values[sym_id(sym)] = x
                out.append(sym)
        layout = _core.make_layout(tuple(shape), stride=tuple(stride)) if shape else _core.make_layout(1)
        ptr = Pointer(None, rt.element_type, GMEM, rt.assumed_align, host=index, wide=wide)
        return Tensor(ptr, layout, rt.element_type), plan

    def read(self, v, read):
        env, ptrs, _, _, tensors = read
        rt = v if isinstance(v, RuntimeTensor) else runtime_view(v)
        if rt is None:
            raise DSLTypeError(f"argument '{self.name}' must be a tensor, got {type(v).__name__}", None)
        if rt.spec() != self.spec and not satisfies(rt.spec(), self.spec):
            spec_mismatch(self, rt)
        if rt.device == "fake":
            fake_tensor_error(self)
        ptrs[self.index] = rt.data_ptr
        tensors[self.index] = rt
        shape, stride = rt.shape, rt.stride
        for sid, what, k in self.symbols:
            env[sid] = shape[k] if what == "shape" else stride[k]

    def symbol_env(self, v, env) -> bool:
        rt = runtime_view(v)
        if rt is None:
            return False
        for sid, what, k in self.symbols:
            env[sid] = rt.shape[k] if what == "shape" else rt.stride[k]
        return True

    def symbol_ids(self) -> list:
        return [sid for sid, _, _ in self.symbols]

    def fast_lines(self, env, hosted):
        i = self.index
        env.update({f"S{i}": self.spec, "RT": RuntimeTensor, "view": view_or_error, "satisfies": satisfies,
                    "mismatch": spec_mismatch, "fake": fake_tensor_error})
        body = []
        if not hosted:
            # A torch tensor passed directly: its view's specialisation depends only on its dtype, the alignment
            # of its address and which strides are 1 (and their powers of two), so the answer of the check is
            # kept per such key; the view itself is built only for a new key.
            env.update({f"OK{i}": {}, "torch_key": torch_key, "torch_check": torch_check})
            body += [f"if type(a{i}) is not RT and type(a{i}).__name__ == 'Tensor' and "
                     f"type(a{i}).__module__ == 'torch':",
                     f"    st = a{i}.stride(); p{i} = a{i}.data_ptr(); k = torch_key(a{i}.dtype, p{i}, st)",
                     f"    if k not in OK{i}: torch_check(plans[{i}], a{i}, S{i}, OK{i}, k)",
                     f"    sh = a{i}.shape"]
            for sid, what, k in self.symbols:
                body.append(f"    s{sid} = {'sh' if what == 'shape' else 'st'}[{k}]")
            body.append("else:")
        pad = "" if hosted else "    "
        body += [pad + f"t = a{i} if type(a{i}) is RT else view(plans[{i}], a{i})",
                 pad + "sp = t._spec or t.spec()",
                 pad + f"if sp is not S{i} and sp != S{i} and not satisfies(sp, S{i}): mismatch(plans[{i}], t)",
                 pad + f"p{i} = t.data_ptr",
                 pad + f"if not p{i} and t.device == 'fake': fake(plans[{i}])"]
        if hosted:
            body.append(f"t{i} = t")
        for sid, what, k in self.symbols:
            body.append(pad + f"s{sid} = t._{'shape' if what == 'shape' else 'strides'}[{k}]")
        return body

    def native(self, slots):
        reads = [(slots.slot(slots.syms, sid), what == "stride", k) for sid, what, k in self.symbols]
        return (NATIVE_TENSOR, self.spec, slots.slot(slots.ptrs, self.index), len(self.spec[2]), True, reads)

    def c_args(self, name, c_identifier, host_symbols):
        cname = c_identifier(name)
        shapes = [(sid, k) for sid, what, k in self.symbols if what == "shape"]
        strides = [(sid, k) for sid, what, k in self.symbols if what == "stride"]
        bits = max([host_symbols[sid].bits for sid, _, _ in self.symbols] or [32])
        return [CArg(self, cname, f"{{prefix}}_Tensor_{cname}_t", shapes=shapes, strides=strides, bits=bits,
                     spec=self.spec, divisibility={sid: host_symbols[sid].divisibility for sid, _, _ in self.symbols})]

    def c_parameter(self, a, prefix):
        return f"{a.ctype.format(prefix=prefix)} *{a.name}"

    def c_declarations(self, a, prefix):
        it = f"int{a.bits}_t"
        spec = a.spec
        lines = [f"/* {a.name}: {spec[1]} tensor, shape {_spec_text(spec[2])}, stride {_spec_text(spec[3])}, "
                 f"data aligned to {spec[4]} bytes. */", "typedef struct {", "  void *data;"]
        if a.shapes:
            lines.append(f"  {it} dynamic_shapes[{len(a.shapes)}];  /* modes {', '.join(str(k) for _, k in a.shapes)} */")
        if a.strides:
            lines.append(f"  {it} dynamic_strides[{len(a.strides)}];  /* modes "
                         f"{', '.join(str(k) for _, k in a.strides)} */")
        return lines + [f"}} {a.ctype.format(prefix=prefix)};", ""]

    def c_checks(self, a, symbols):
        o = [f'  if ({a.name} == NULL) return ww_fail(WW_INVALID_VALUE, "argument {a.name} is NULL");']
        align = a.spec[4]
        if align > 1:
            o.append(f"  if ((uintptr_t){a.name}->data % {align} != 0) return ww_fail(WW_INVALID_VALUE, "
                     f'"argument {a.name}: data is not aligned to {align} bytes as compiled for");')
        for field, modes in (("dynamic_shapes", a.shapes), ("dynamic_strides", a.strides)):
            for j, (sid, k) in enumerate(modes):
                v = f"{a.name}->{field}[{j}]"
                symbols[sid] = v
                what = f"{a.name}.{'shape' if field == 'dynamic_shapes' else 'stride'}[{k}]"
                o.append(f"  if ({v} < 0) return ww_fail(WW_INVALID_VALUE, \"{what} is negative\");")
                div = a.divisibility[sid]
                if div > 1:
                    o.append(f"  if ({v} % {div} != 0) return ww_fail(WW_INVALID_VALUE, \"{what} is not a "
                             f"multiple of {div}, as compiled for\");")
        return o

    def c_address(self, a):
        return f"{a.name}->data"

    def c_metadata(self, a):
        return {"spec": a.spec, "bits": a.bits, "shapes": [k for _, k in a.shapes],
                "strides": [k for _, k in a.strides]}

    def tvm_lines(self, a, i, o, call, prefix):
        v = tvm_value(i)
        spec = a.spec
        dname = storage_name(spec[1])
        if dname not in DL_DTYPE:
            raise DSLNotImplementedError(f"--enable-tvm-ffi: argument '{a.name}' is a {dname} tensor, which has no DLPack "
                                "type code here", user_location(5))
        code, bits = DL_DTYPE[dname]
        rank = len(spec[2])
        t = f"t{i}"
        o += [f"  DLTensor *{t} = ww_tvm_tensor(&{v});",
              f"  {prefix}_Tensor_{a.name}_t x{i};",
              f'  if ({t} == NULL) return ww_tvm_error("TypeError", "argument {a.name} must be a tensor");',
              f"  if ({t}->device.device_type != 2 && {t}->device.device_type != 13) return ww_tvm_error("
              f'"ValueError", "argument {a.name} is not in CUDA memory");',
              f"  if ({t}->dtype.code != {code} || {t}->dtype.bits != {bits} || ({t}->dtype.lanes != 1"
              f"{f' && {t}->dtype.lanes != 2' if dname in DL_PAIRED else ''})) "
              f'return ww_tvm_error("TypeError", "argument {a.name} must be a {dname} tensor");',
              f"  if ({t}->ndim != {rank}) return ww_tvm_error(\"ValueError\", \"argument {a.name} must have "
              f"rank {rank}\");",
              f"  if (device_id < 0) device_id = {t}->device.device_id;",
              f"  else if ({t}->device.device_id != device_id) return ww_tvm_error(\"ValueError\", \"argument "
              f"{a.name} is on another CUDA device than the arguments before it\");",
              f"  x{i}.data = (char *){t}->data + {t}->byte_offset;"]
        # strides: DLPack may leave them NULL for a compact row-major tensor
        o.append(f"  {{ int64_t st[{rank}], sh[{rank}]; int64_t acc = 1; int k;")
        o.append(f"    for (k = {rank} - 1; k >= 0; --k) {{ st[k] = {t}->strides ? {t}->strides[k] : acc; "
                 f"sh[k] = {t}->shape[k]; acc *= {t}->shape[k]; }}")
        if dname in DL_PAIRED:  # two elements a lane pair: in elements, the unit-stride mode is twice as long
            o.append(f"    if ({t}->dtype.lanes == 2) for (k = 0; k < {rank}; ++k) {{ if (st[k] == 1) sh[k] *= 2; "
                     "else st[k] *= 2; }")
        perm = getattr(a, "dlpack_dims", None)
        if perm is not None:  # mode k is the DLPack tensor's dimension perm[k]
            o.append(f"    {{ int64_t psh[{rank}], pst[{rank}];")
            o += [f"      psh[{k}] = sh[{j}]; pst[{k}] = st[{j}];" for k, j in enumerate(perm)]
            o.append(f"      for (k = 0; k < {rank}; ++k) {{ sh[k] = psh[k]; st[k] = pst[k]; }} }}")
        dyn_shape = {k: j for j, (_, k) in enumerate(a.shapes)}
        dyn_stride = {k: j for j, (_, k) in enumerate(a.strides)}
        lim = (1 << (a.bits - 1)) - 1
        for k in range(rank):
            for what, arr, dyn, field in (("shape", "sh", dyn_shape, "dynamic_shapes"),
                                          ("stride", "st", dyn_stride, "dynamic_strides")):
                val = f"{arr}[{k}]"
                static = spec[2][k] if what == "shape" else spec[3][k]
                if k in dyn:
                    o.append(f"    if ({val} > {lim}) return ww_tvm_error(\"ValueError\", \"argument {a.name}: "
                             f"{what} {k} exceeds the {a.bits}-bit index it was compiled with\");")
                    o.append(f"    x{i}.{field}[{dyn[k]}] = ({'int64_t' if a.bits == 64 else 'int32_t'}){val};")
                elif not (what == "stride" and spec[2][k] == 1):  # an extent-1 mode's stride is never read
                    o.append(f"    if ({val} != {static}) return ww_tvm_error(\"ValueError\", \"argument "
                             f"{a.name}: {what} {k} must be {static}, as compiled\");")
        o.append("  }")
        call.append(f"&x{i}")

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        it = ctypes.c_int64 if meta["bits"] == 64 else ctypes.c_int32
        fields = [("data", ctypes.c_void_p)]
        if meta["shapes"]:
            fields.append(("dynamic_shapes", it * len(meta["shapes"])))
        if meta["strides"]:
            fields.append(("dynamic_strides", it * len(meta["strides"])))
        meta["_spec"] = _tuples(meta["spec"])
        struct = type(f"{function.name}_Tensor_{meta['name']}_t", (ctypes.Structure,), {"_fields_": fields})
        function.structs[meta["name"]] = struct
        return ctypes.POINTER(struct)

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        rt = runtime_view(x)
        if rt is None:
            raise DSLTypeError(f"{function.name}: argument '{meta['python_name']}' must be a tensor, got "
                               f"{type(x).__name__}", user_location(4))
        if rt.spec() != meta["_spec"] and not satisfies(rt.spec(), meta["_spec"]):
            raise DSLValueError(f"{function.name}: argument '{meta['python_name']}' does not match what was "
                                f"exported: compiled for {meta['_spec']}, called with {rt.spec()}", user_location(4))
        s = function.structs[meta["name"]]()
        s.data = rt.data_ptr
        for j, k in enumerate(meta["shapes"]):
            s.dynamic_shapes[j] = rt.shape[k]
        for j, k in enumerate(meta["strides"]):
            s.dynamic_strides[j] = rt.stride[k]
        return ctypes.byref(s)


def pointer_address(plan, v):
    if not isinstance(v, RuntimePointer) or v.spec() != plan.spec:
        raise DSLValueError(f"argument '{plan.name}' must be a pointer like the one compiled for ({plan.spec}), "
                            f"got {v!r}", None)
    return v.address


class PointerArg(ArgPlan):
    """A pointer (make_ptr): its address, of the compiled element type, memory space and alignment."""

    kind = "pointer"
    native_code = NATIVE_POINTER

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return isinstance(value, RuntimePointer)

    @classmethod
    def spec_key(cls, value, annotation):
        return value.spec()

    cache_key = classmethod(keyed_by_value)

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        ptr = Pointer(None, value.element_type, GMEM, value.assumed_align, host=index, wide=True)
        return ptr, cls(index, name, value.spec(), value.element_type)

    def read(self, v, read):
        read[1][self.index] = pointer_address(self, v)
        read[4][self.index] = v  # what a host argument computed from the pointer (a tensor map) is given

    def fast_lines(self, env, hosted):
        env["pointer_address"] = pointer_address
        return [f"p{self.index} = pointer_address(plans[{self.index}], a{self.index})"] + \
            ([f"t{self.index} = a{self.index}"] if hosted else [])

    def native(self, slots):
        _, _, space, align = self.spec
        return (NATIVE_POINTER, slots.slot(slots.ptrs, self.index), RuntimePointer, self.dtype, AddressSpace[space],
                align)

    def c_args(self, name, c_identifier, host_symbols):
        return [CArg(self, c_identifier(name), "void *", spec=self.spec, align=self.spec[3])]

    def c_checks(self, a, symbols):
        if a.align <= 1:
            return []
        return [f"  if ((uintptr_t){a.name} % {a.align} != 0) return ww_fail(WW_INVALID_VALUE, "
                f'"argument {a.name} is not aligned to {a.align} bytes as compiled for");']

    def c_address(self, a):
        return a.name

    def c_metadata(self, a):
        return {"spec": a.spec}

    def tvm_lines(self, a, i, o, call, prefix):
        v = tvm_value(i)
        o.append(f"  if ({v}.type_index != kTVMFFIOpaquePtr && {v}.type_index != kTVMFFIInt) return "
                 f'ww_tvm_error("TypeError", "argument {a.name} must be a pointer");')
        call.append(f"({v}.type_index == kTVMFFIOpaquePtr ? {v}.v_ptr : (void *)(intptr_t){v}.v_int64)")

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        return ctypes.c_void_p

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        if not isinstance(x, RuntimePointer) or x.spec() != _tuples(meta["spec"]):
            raise DSLValueError(f"{function.name}: argument '{meta['python_name']}' must be a pointer like the "
                                f"one exported ({_tuples(meta['spec'])}), got {x!r}", user_location(4))
        return x.address


def passes_at_call(value, numbers: bool) -> bool:
    """Whether a list or tuple argument holds something read at each call: a tensor, a pointer, a DSL number or,
    where `numbers`, a Python number. A jit function takes each number of a tuple or list (at any depth) as a
    runtime value, as it takes a number argument of its own: a problem shape `(m, n, k)` is read at each call, one
    compilation serves every shape, and no trip count is known while tracing. A parameter annotated with a layout
    algebra name (cute.Shape, ...) takes Python numbers as compile-time values (values/layout_annotations.py)."""
    return any(isinstance(x, (RuntimeTensor, RuntimePointer, Numeric, SymbolicInt)) or is_torch_tensor(x) or
               numbers and isinstance(x, (bool, int, float)) or
               isinstance(x, (list, tuple)) and passes_at_call(x, numbers) for x in value)


def element_annotations(value, annotation) -> list:
    """The annotation of each element of a list or tuple argument annotated `annotation`: a NamedTuple field's own
    (a field annotated cutlass.Constexpr is compiled in, as a parameter so annotated is); else none (a plain tuple's
    element type, as in `tuple[Int64, Float32]`, does not type its numbers), except that a layout algebra annotation
    compiles the Python numbers of its tuples in at every depth."""
    fields = getattr(type(value), "__annotations__", {}) if hasattr(type(value), "_fields") else {}
    anns = [fields.get(f, inspect.Parameter.empty) for f in getattr(type(value), "_fields", ())]
    rest = annotation if compiles_numbers_in(annotation) else inspect.Parameter.empty
    return anns + [rest] * (len(value) - len(anns))


def tree_mismatch(plan, v):
    raise DSLTypeError(f"argument '{plan.name}' must be a {plan.spec[1]} of {len(plan.children)} elements, got {v!r}",
                       None)


# The kinds of elements the generated Python fast path reads in a list or tuple (named by fast_id there).
_FAST_ELEMENT_KINDS = ("int", "scalar", "const", "constexpr")


class TreeArg(ArgPlan):
    """A list or tuple holding tensors or numbers: each element an argument of its own, keyed (index, k); the other
    elements (None, strings, atoms, ...) are compiled in, each in its place."""

    kind = "tree"
    # arg_plan's kind_of and kind_named, which list this kind among the others (set there: importing them here
    # would make a circle): an element is the kind its value and annotation make it.
    kind_of = None
    kind_named = None

    def __init__(self, index, name, spec, dtype=None, symbols=None, children=()):
        super().__init__(index, name, spec, dtype, symbols)
        self.children = list(children)

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return isinstance(value, (list, tuple)) and passes_at_call(value, not compiles_numbers_in(annotation))

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        hosts, children = [], []
        for k, (x, ann) in enumerate(zip(cls.elements(value), cls.annotations(value, annotation))):
            h, p = make_host_arg(st, (index, k) if isinstance(index, int) else index + (k,),
                                 cls.element_name(name, value, k), x, ann)
            hosts.append(h)
            children.append(p)
        return cls.rebuilt(value, hosts), cls(index, name, cls._spec(value, children), children=children)

    # --- what a subclass of other containers (arg_dataclass.py) changes ---------------------------------------

    @staticmethod
    def elements(value) -> list:
        """The values of the container's elements, in order."""
        return value

    @staticmethod
    def annotations(value, annotation) -> list:
        return element_annotations(value, annotation)

    @staticmethod
    def element_name(name: str, value, k: int) -> str:
        return f"{name}[{k}]"

    @staticmethod
    def rebuilt(value, hosts):
        """The container the function traces with: the value's kind of container, of the elements' stand-ins."""
        if hasattr(value, "_fields"):  # a NamedTuple (a scheduler's arguments, say) keeps its type and field names
            return type(value)(*hosts)
        return tuple(hosts) if isinstance(value, tuple) else hosts

    def element_c_name(self, name: str, k: int) -> str:
        return f"{name}_{k}"

    def matches(self, v) -> bool:
        """Whether a call's value is a container of the compiled count of elements."""
        return isinstance(v, (list, tuple)) and len(v) == len(self.children)

    # ---------------------------------------------------------------------------------------------------------

    @classmethod
    def _spec(cls, value, children):
        return (cls.kind, type(value).__name__, tuple(c.spec for c in children))

    @classmethod
    def spec_key(cls, value, annotation):
        return (type(value).__name__, tuple(cls.kind_of(x, a).spec_key(x, a)
                                            for x, a in zip(cls.elements(value), cls.annotations(value, annotation))))

    @classmethod
    def cache_key(cls, value, annotation, stable) -> str:
        """Its elements' keys: a number's is its type, not its value, so that another process reuses the
        compilation for other numbers."""
        t = type(value)
        parts = [cls.kind_of(x, a).cache_key(x, a, stable)
                 for x, a in zip(cls.elements(value), cls.annotations(value, annotation))]
        return f"{t.__module__}.{t.__qualname__}[" + ", ".join(parts) + "]"

    def stored_fields(self) -> dict:
        fields = super().stored_fields()
        fields.pop("spec", None)   # its compile-time elements' part is the calling values' (restore)
        fields["children"] = [{"kind": c.kind, **c.stored_fields()} for c in self.children]
        return fields

    def restore(self, values) -> None:
        value = values[self.index]
        children = []
        for fields, x in zip(self.children, self.elements(value)):
            fields = dict(fields)
            kind = self.kind_named(fields.pop("kind"))
            child = kind.__new__(kind)
            child.__dict__.update(fields)
            child.restore({child.index: x})
            children.append(child)
        self.children = children
        self.spec = self._spec(value, children)

    def read(self, v, read):
        if not self.matches(v):
            tree_mismatch(self, v)
        for child, x in zip(self.children, self.elements(v)):
            child.read(x, read)

    def symbol_env(self, v, env) -> bool:
        if not self.matches(v):
            return False
        return all(child.symbol_env(x, env) for child, x in zip(self.children, self.elements(v)))

    def symbol_ids(self) -> list:
        return [sid for child in self.children for sid in child.symbol_ids()]

    @property
    def fast_path(self) -> bool:
        """A tuple of numbers and compile-time values (a problem shape) is read by the generated Python fast path,
        element by element; one holding tensors or pointers goes the general way."""
        return all(c.kind in _FAST_ELEMENT_KINDS or c.kind == "tree" and c.fast_path for c in self.children)

    def native(self, slots):
        """(NATIVE_TREE, [each element's description]): the C++ fast path reads what fast_lines reads (numbers and
        compile-time values, at any depth; bindings/fast_call_tree.cpp); None for a tuple holding tensors or
        pointers, which goes the general way."""
        out = []
        for c in self.children:
            d = c.native(slots) if c.kind in _FAST_ELEMENT_KINDS or c.kind == "tree" else None
            if d is None:
                return None
            out.append(d)
        return (NATIVE_TREE, out)

    def fast_lines(self, env, hosted):
        i = fast_id(self.index)
        env.update({"tree_mismatch": tree_mismatch, f"P{i}": self})
        lines = [f"if not isinstance(a{i}, (list, tuple)) or len(a{i}) != {len(self.children)}: "
                 f"tree_mismatch(P{i}, a{i})"]
        for k, child in enumerate(self.children):
            lines.append(f"a{fast_id(child.index)} = a{i}[{k}]")
            lines += child.fast_lines(env, False)
        return lines

    def c_args(self, name, c_identifier, host_symbols):
        out = []
        for k, child in enumerate(self.children):
            for a in child.c_args(self.element_c_name(name, k), c_identifier, host_symbols):
                a.path = (k,) + getattr(a, "path", ())  # where TVM FFI finds it: in the tuple's element k
                out.append(a)
        return out
