"""C source of an exported compiled function (export.py): a header that declares what a C or C++ program calls,
and a translation unit that embeds the cubin and launches its kernels through the CUDA driver API alone.

What a call of the compiled function does in Python (compiled_function.py: read the arguments into symbol values,
check what the kernels assume of them, evaluate grid and shared memory, pack the parameters, launch) is written
out here as C over the same launch plan, so that the exported wrapper launches exactly what the Python call would.

The C interface, in CuTe DSL's names (prefix = function_prefix):

    typedef struct { void *data; int32_t dynamic_shapes[n]; int32_t dynamic_strides[m]; } prefix_Tensor_<arg>_t;
    typedef struct { ... } prefix_Kernel_Module_t;
    int32_t prefix_Kernel_Module_Load(prefix_Kernel_Module_t *module);
    int32_t prefix_Kernel_Module_Unload(prefix_Kernel_Module_t *module);
    int32_t cute_dsl_prefix_wrapper(prefix_Kernel_Module_t *module, <arguments of the @cute.jit function>);
    const char *prefix_Last_Error(void);      (what the last failing call of this thread refused, or "")
    const char *prefix_Metadata(void);        (JSON: the arguments, for cute.runtime.load_module)

Tensors are passed by pointer to their struct (the dynamic extents and strides only, in mode order; the static ones
are compiled in and not passed; the integers are 64-bit where the tensor was compiled with 64-bit indexing), runtime
integers and scalars by value, pointers as `void *`, a stream argument as a CUstream; compile-time constants are not
passed, an event argument as a CUevent (NULL: no event, as None in Python). Where the kernels use a device
workspace, the wrapper takes its address last (`void *workspace`, 64-byte aligned), and

    int32_t prefix_Workspace_Size(<the wrapper's arguments but the module and the workspace>, uint64_t *bytes);

answers the bytes a call with those arguments needs (QueryDeviceWorkspaceFunc in Python). Every function returns a
CUresult value: 0 on success, CUDA_ERROR_INVALID_VALUE (1) for arguments that break
what the kernels were compiled for (prefix_Last_Error() says which), or the driver's error.
"""
from __future__ import annotations

import ast
import json
import re

from ..base.errors import DSLNotImplementedError, DSLValueError, user_location
from ..call.arg_kind import CArg, HostStream
from ..call import workspace as _workspace
from ..call.arg_tensor import PointerArg, TensorArg
from ..host.host_loop import launch_groups
from ..host.launch_plan import (NON_PORTABLE_CLUSTER_SIZE_ALLOWED, dim_source, needs_launch_options,
                                needs_nonportable_cluster)
from . import host_program_c
from ..values.host_inputs import stream_handle

ABI_VERSION = 1

# C types of a kernel parameter's struct format (launch_plan.SCALAR_FMT and BOOL_FMT; half and bfloat16 travel as
# their bits).
_FMT_CTYPE = {"?": "uint8_t", "B": "uint8_t", "b": "int8_t", "h": "int16_t", "i": "int32_t", "I": "uint32_t",
              "q": "int64_t", "Q": "uint64_t",
              "e": "uint16_t", "H": "uint16_t", "f": "float", "d": "double"}
_FMT_SIZE = {"?": 1, "B": 1, "b": 1, "h": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "e": 2, "H": 2, "f": 4, "d": 8}


def _param_value(fmt: str, x: str) -> str:
    """The C declaration of `v`, kernel parameter of struct format fmt, from the C value x: a Boolean's byte is 0 or
    1 whatever x is (launch_plan.BOOL_FMT)."""
    ct = _FMT_CTYPE[fmt]
    return f"{ct} v = ({x}) != 0" if fmt == "?" else f"{ct} v = ({ct}){x}"


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Names a wrapper parameter may not have: C and C++ keywords, and the wrapper's own names.
_RESERVED = set("""auto bool break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while class delete new operator private protected public template this throw try catch namespace using
virtual friend module current""".split())


class CPointer:
    """A pointer argument inside the wrapper, for a host argument's C form: its name and data (a `void *`)."""

    def __init__(self, arg: "CArg"):
        self.name = arg.name
        self.data = arg.name


class CTensor:
    """C expressions of a tensor argument inside the wrapper, for a host argument's C form (host_arguments.py):
    data (a `void *`), shape(k) and stride(k) (int64_t; compiled-in values where the mode is static)."""

    def __init__(self, arg: "CArg"):
        self.name = arg.name
        self.spec = arg.spec
        self.rank = len(arg.spec[2])
        self.element_type = arg.spec[1]
        self.data = f"{arg.name}->data"
        self._shapes = {k: j for j, (_, k) in enumerate(arg.shapes)}
        self._strides = {k: j for j, (_, k) in enumerate(arg.strides)}

    def shape(self, k: int) -> str:
        if k in self._shapes:
            return f"((int64_t){self.name}->dynamic_shapes[{self._shapes[k]}])"
        return f"INT64_C({self.spec[2][k]})"

    def stride(self, k: int) -> str:
        if k in self._strides:
            return f"((int64_t){self.name}->dynamic_strides[{self._strides[k]}])"
        return f"INT64_C({self.spec[3][k]})"


def c_identifier(name: str) -> str:
    """A C name of an argument: its Python name where that is one and is not taken (else arg_<name>)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not _IDENT.match(out) or out in _RESERVED or out.startswith("ww_") or re.match(r"^s\d+$", out):
        out = "arg_" + out
    return out


def c_arguments(compiled) -> list[CArg]:
    """The C wrapper's parameters, in the order of the jit function's arguments (compile-time constants left out)."""
    out: list[CArg] = []
    for plan in compiled.plans:
        if compiled.bound_self and plan.index == 0 and plan.passed_to_c:
            raise DSLNotImplementedError("export_to_c: a compiled @cute.jit method is bound to its object; export a "
                                         "@cute.jit function instead", user_location(2))
        for a in plan.c_args(plan.name, c_identifier, compiled.host_symbols):
            a.top = plan  # the argument it comes from (a tuple gives one per element)
            out.append(a)
    if compiled._takes_workspace:  # after the function's own arguments, as the compiled function takes it
        out.append(_workspace.c_argument(compiled, {a.name for a in out} | {p.name for p in compiled.plans}))
    names = [a.name for a in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise DSLValueError(f"export_to_c: the arguments {sorted(dup)} have the same C name", user_location(2))
    return out


# ---- expressions of the launch plan (Python source over s<id>, launch_plan.dim_source) as C over int64_t ----

class _CExpr(ast.NodeVisitor):
    _BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitXor: "^"}

    def visit_Expression(self, node):
        return self.visit(node.body)

    def visit_Constant(self, node):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise ValueError(f"constant {node.value!r}")
        return f"INT64_C({node.value})"

    def visit_Name(self, node):
        if not re.match(r"^s\d+$", node.id):
            raise ValueError(f"name {node.id}")
        return node.id

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.USub):
            return f"(-{self.visit(node.operand)})"
        raise ValueError("unary operator")

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.FloorDiv):
            return f"ww_floordiv({a}, {b})"
        if isinstance(node.op, ast.Mod):
            return f"ww_floormod({a}, {b})"
        op = self._BIN.get(type(node.op))
        if op is None:
            raise ValueError("binary operator")
        return f"({a} {op} {b})"

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(node.args) == 2:
            return f"ww_{node.func.id}({self.visit(node.args[0])}, {self.visit(node.args[1])})"
        raise ValueError("call")

    def generic_visit(self, node):
        raise ValueError(type(node).__name__)


def c_expr(x) -> str:
    """C (int64_t arithmetic, Python's flooring // and %) of a launch dimension or a symbolic integer."""
    src = x if isinstance(x, str) else dim_source(x)
    return _CExpr().visit(ast.parse(src, mode="eval"))


def symbols_in(x) -> set[int]:
    """The symbol ids an expression reads (its names s<id>; min and max, which it may call, are no symbols)."""
    src = x if isinstance(x, str) else dim_source(x)
    return {int(n.id[1:]) for n in ast.walk(ast.parse(src, mode="eval"))
            if isinstance(n, ast.Name) and re.match(r"^s\d+$", n.id)}


# ---- the pieces of the call that the C wrapper checks ----

_ASSUMPTION_C = [
    "({a} != 0 && ww_floormod({b}, {a}) == 0)",
    "(({a} != 0 && ww_floormod({b}, {a}) == 0) || ({b} != 0 && ww_floormod({a}, {b}) == 0))",
    "(({b} != 0 && ww_floormod({a}, {b}) == 0) || {a} < {b})",
    "({a} < {b})",
    "({c} == {d} || ({a} != 0 && ww_floormod({b}, {a}) == 0))",
]  # function_cache._HOLDS, the kinds of _core.AssumptionScope


def assumption_sources(assumptions) -> list[tuple]:
    """(kind, a, b, c, d, what) of each assumption of a compiled function, fresh or read from the cache."""
    src = getattr(assumptions, "sources", None)
    if src is not None:
        return list(src)
    return [tuple(a) for a in assumptions.exported()]


_OCTAL = [f"\\{b:03o}" for b in range(256)]


def _c_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=True).replace("?", "\\?")  # no trigraphs


def launch_stream(launch, args_by_index) -> str:
    """The C expression of a launch's stream: the stream argument, or the default stream."""
    if isinstance(launch.stream, HostStream):
        return args_by_index[launch.stream.arg_index].name
    try:
        handle = stream_handle(launch.stream)
    except (TypeError, ValueError):
        handle = None
    if handle != 0:
        raise DSLNotImplementedError(f"export_to_c: kernel {launch.kernel} is launched on a stream fixed when "
                                     "compiling; pass the stream as an argument of the @cute.jit function",
                                     user_location(3))
    return "(CUstream)0"


def check_exportable(compiled) -> None:
    if compiled.cubin is None or not compiled.launches:
        raise DSLValueError(f"export_to_c: {compiled.jit_function.fn.__name__} launches no kernel; there is "
                            "nothing to export", user_location(3))
    if any(getattr(a, "c_form", None) is None for a in _exported_actions(compiled.host_actions)):
        raise DSLNotImplementedError(f"export_to_c: {compiled.jit_function.fn.__name__} does host-side work at "
                                     "each call that needs Python (a host print of a floating-point argument, of "
                                     "tensor elements or under a host branch or loop); move it out of the function "
                                     "to export it", user_location(3))
    for hid, h in compiled.host_arguments.items():
        export = getattr(h.producer, "export_c", None)
        if export is None:
            raise DSLNotImplementedError(
                f"export_to_c: kernel parameter {h.producer.name!r} (computed from argument "
                f"'{compiled.plans[h.tensor_index].name}' at each call by the backend's host hook) cannot be "
                "computed by exported C code: its backend gives no C form of it. Export a kernel without it "
                "(e.g. one without TMA), or call the compiled function from Python", user_location(3))


def _exported_actions(actions) -> list:
    """The host actions an exported call makes (a read whose value no exported action uses is left out)."""
    return [a for a in actions if not getattr(a, "c_omitted", False)]


def header(compiled, args: list[CArg], prefix: str, guard: str) -> str:
    nfun = len({l.kernel for l in compiled.launches})
    lines = [f"/* {prefix}: exported by warpweave from @cute.jit {compiled.jit_function.fn.__name__} for "
             f"{compiled.target['name']}. */",
             f"#ifndef {guard}", f"#define {guard}", "", "#include <stdbool.h>", "#include <stdint.h>", "",
             "/* The CUDA driver API's handle types (cuda.h declares the same ones). */",
             "#ifndef __cuda_cuda_h__",
             "typedef struct CUstream_st *CUstream;", "typedef struct CUmod_st *CUmodule;",
             "typedef struct CUfunc_st *CUfunction;", "typedef struct CUctx_st *CUcontext;",
             "typedef struct CUevent_st *CUevent;", "#endif", "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    for a in args:
        lines += a.plan.c_declarations(a, prefix)
    lines += ["/* The loaded cubin: load it once per CUDA context (the current one, or device 0's primary context",
              "   when none is current), unload it when done. */",
              "typedef struct {", "  CUmodule module;", "  CUcontext context;",
              f"  CUfunction functions[{nfun}];", f"  int32_t max_dynamic_smem[{nfun}];", "  int32_t retained;",
              f"}} {prefix}_Kernel_Module_t;", "",
              f"int32_t {prefix}_Kernel_Module_Load({prefix}_Kernel_Module_t *module);",
              f"int32_t {prefix}_Kernel_Module_Unload({prefix}_Kernel_Module_t *module);",
              f"int32_t cute_dsl_{prefix}_wrapper({wrapper_params(args, prefix)});",
              f"const char *{prefix}_Last_Error(void);", f"const char *{prefix}_Metadata(void);", ""]
    if compiled._takes_workspace:
        lines[-1:] = ["/* The device workspace bytes a call with these arguments needs (the wrapper's last argument). */",
                      f"int32_t {prefix}_Workspace_Size({workspace_size_params(args, prefix)});", ""]
    lines += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def workspace_size_params(args: list[CArg], prefix: str) -> str:
    ps = [a.plan.c_parameter(a, prefix) for a in args if a.kind != "workspace"]
    return ", ".join(ps + ["uint64_t *size_in_bytes"])


def wrapper_params(args: list[CArg], prefix: str) -> str:
    ps = [f"{prefix}_Kernel_Module_t *module"]
    for a in args:
        ps.append(a.plan.c_parameter(a, prefix))
    return ", ".join(ps)


def metadata(compiled, args: list[CArg], prefix: str) -> dict:
    out = []
    for a in args:
        d = {"name": a.name, "kind": a.kind, "index": a.plan.index if isinstance(a.plan.index, (int, str))
             else list(a.plan.index), "python_name": a.plan.name}
        d.update(a.plan.c_metadata(a))
        out.append(d)
    params = [p.name for p in compiled.jit_function.signature.parameters.values()]
    consts = [p.name for p in compiled.plans if not p.passed_to_c]
    return {"abi": ABI_VERSION, "prefix": prefix, "function": compiled.jit_function.fn.__name__,
            "target": compiled.target["name"], "parameters": params, "constants": consts, "arguments": out,
            "kernels": [l.kernel for l in compiled.launches]}


_PRELUDE = r"""
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The few CUDA driver entry points this file calls, declared as cuda.h does (the driver's ABI is stable), so that
   building it needs no CUDA headers; linking needs -lcuda. Built for a Python module (WW_WEAK_DRIVER), they are
   weak: the module loads without a driver, and says so when called. */
#ifdef WW_WEAK_DRIVER
#define WW_DRIVER_ENTRY extern __attribute__((weak))
#else
#define WW_DRIVER_ENTRY extern
#endif
typedef int ww_CUresult;
typedef struct { unsigned x, y, z; } ww_dim3;
typedef struct { CUevent event; int flags; int triggerAtBlockStart; } ww_event_attr;
typedef struct { int id; char pad[4]; union { char pad[64]; ww_dim3 clusterDim; int cooperative; ww_event_attr event; }
    value; } ww_CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  ww_CUlaunchAttribute *attrs;
  unsigned numAttrs;
} ww_CUlaunchConfig;
WW_DRIVER_ENTRY ww_CUresult cuInit(unsigned flags);
WW_DRIVER_ENTRY ww_CUresult cuDeviceGet(int *device, int ordinal);
WW_DRIVER_ENTRY ww_CUresult cuCtxGetCurrent(CUcontext *ctx);
WW_DRIVER_ENTRY ww_CUresult cuCtxSetCurrent(CUcontext ctx);
WW_DRIVER_ENTRY ww_CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int device);
WW_DRIVER_ENTRY ww_CUresult cuDevicePrimaryCtxRelease_v2(int device);
WW_DRIVER_ENTRY ww_CUresult cuModuleLoadData(CUmodule *module, const void *image);
WW_DRIVER_ENTRY ww_CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name);
WW_DRIVER_ENTRY ww_CUresult cuModuleUnload(CUmodule module);
WW_DRIVER_ENTRY ww_CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value);
WW_DRIVER_ENTRY ww_CUresult cuGetErrorString(ww_CUresult error, const char **text);
WW_DRIVER_ENTRY ww_CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned smem, CUstream stream, void **params, void **extra);
WW_DRIVER_ENTRY ww_CUresult cuLaunchKernelEx(const ww_CUlaunchConfig *config, CUfunction f, void **params, void **extra);

#define WW_INVALID_VALUE 1              /* CUDA_ERROR_INVALID_VALUE */
#define WW_NO_DRIVER 35                 /* CUDA_ERROR_INSUFFICIENT_DRIVER */
#define WW_STUB_LIBRARY 34              /* CUDA_ERROR_STUB_LIBRARY */
#define WW_MAX_DYNAMIC_SHARED_SIZE 8    /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
#define WW_ATTR_COOPERATIVE 2
#define WW_ATTR_CLUSTER_DIMENSION 4
#define WW_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION 6
#define WW_ATTR_PROGRAMMATIC_EVENT 7
#define WW_ATTR_LAUNCH_COMPLETION_EVENT 12
#define WW_ATTR_PREFERRED_CLUSTER_DIMENSION 11

static int64_t ww_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static int64_t ww_floormod(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static int64_t ww_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ww_max(int64_t a, int64_t b) { return a > b ? a : b; }
"""


def source(compiled, args: list[CArg], prefix: str, header_name: str) -> str:
    kernels = list(dict.fromkeys(l.kernel for l in compiled.launches))
    cubin = compiled.cubin
    by_index = {a.plan.index: a for a in args}
    meta = json.dumps(metadata(compiled, args, prefix), separators=(",", ":"))
    o = [f'/* {prefix}: exported by warpweave (C wrapper ABI {ABI_VERSION}). */', f'#include "{header_name}"',
         _PRELUDE, host_program_c.HELPERS]
    o.append(f"static _Thread_local char ww_error[512];")
    o.append("static int32_t ww_fail(int32_t code, const char *what) {")
    o.append(f'  snprintf(ww_error, sizeof ww_error, "{prefix}: %s", what);')
    o.append("  return code;")
    o.append("}")
    o.append("static int32_t ww_driver(int32_t r, const char *call) {")
    o.append("  const char *text = NULL;")
    o.append("  if (r == 0) return 0;")
    o.append("  if (r == WW_STUB_LIBRARY)  /* the stub names no errors: what it is, and the usual way it got here */")
    o.append('    text = "CUDA_ERROR_STUB_LIBRARY: the CUDA toolkit\'s stub libcuda.so answered in place of the driver '
             '(was the stub loaded with RTLD_GLOBAL before the driver?)";')
    o.append("  else if (cuGetErrorString(r, &text) != 0 || text == NULL) text = \"unknown error\";")
    o.append(f'  snprintf(ww_error, sizeof ww_error, "{prefix}: %s failed: %s (%d)", call, text, (int)r);')
    o.append("  return r;")
    o.append("}")
    declared = set()
    for h in compiled.host_arguments.values():  # the C forms' own declarations (e.g. driver entry points)
        if h.producer.name not in declared:
            declared.add(h.producer.name)
            o.append(_host_argument_c(h, by_index, "ww_unused")[0])
    o.append(f"const char *{prefix}_Last_Error(void) {{ return ww_error; }}")
    o.append(f"const char *{prefix}_Metadata(void) {{ return {_c_string(meta)}; }}")
    # The cubin, 8-byte aligned as the driver's loader reads it.
    words = (len(cubin) + 7) // 8
    padded = cubin + b"\0" * (words * 8 - len(cubin))
    # As string pieces of octal escapes, which C compilers read about ten times faster than a list of numbers
    # (a GEMM's cubin is hundreds of KiB, and each kernel cache miss compiles it); the literal's NUL is extra.
    o.append(f"static const unsigned char ww_cubin[{words * 8 + 1}] __attribute__((aligned(16))) =")
    for i in range(0, len(padded), 32):
        o.append('  "' + "".join(_OCTAL[b] for b in padded[i:i + 32]) + '"')
    o.append(";")
    o.append("static const char *const ww_kernel_names[] = {" + ", ".join(_c_string(k) for k in kernels) + "};")
    # Load / unload.
    o.append(f"int32_t {prefix}_Kernel_Module_Load({prefix}_Kernel_Module_t *m) {{")
    o.append("  int32_t r; int dev = 0; unsigned i;")
    o.append(f'  if (m == NULL) return ww_fail(WW_INVALID_VALUE, "the module is NULL");')
    o.append("  memset(m, 0, sizeof *m);")
    o.append("#ifdef WW_WEAK_DRIVER")
    o.append('  if (cuInit == NULL || cuLaunchKernelEx == NULL) return ww_fail(WW_NO_DRIVER, '
             '"no CUDA driver (libcuda.so.1) is loaded in this process");')
    o.append("#endif")
    o.append('  if ((r = cuInit(0)) != 0) return ww_driver(r, "cuInit");')
    o.append('  if ((r = cuCtxGetCurrent(&m->context)) != 0) return ww_driver(r, "cuCtxGetCurrent");')
    o.append("  if (m->context == NULL) {  /* none current: device 0's primary context, as the runtime API does */")
    o.append('    if ((r = cuDeviceGet(&dev, 0)) != 0) return ww_driver(r, "cuDeviceGet");')
    o.append('    if ((r = cuDevicePrimaryCtxRetain(&m->context, dev)) != 0) return ww_driver(r, "cuDevicePrimaryCtxRetain");')
    o.append("    m->retained = 1;")
    o.append('    if ((r = cuCtxSetCurrent(m->context)) != 0) return ww_driver(r, "cuCtxSetCurrent");')
    o.append("  }")
    o.append('  if ((r = cuModuleLoadData(&m->module, ww_cubin)) != 0) return ww_driver(r, "cuModuleLoadData");')
    o.append(f"  for (i = 0; i < {len(kernels)}; ++i)")
    o.append("    if ((r = cuModuleGetFunction(&m->functions[i], m->module, ww_kernel_names[i])) != 0) {")
    o.append("      cuModuleUnload(m->module); m->module = NULL;")
    o.append('      return ww_driver(r, "cuModuleGetFunction");')
    o.append("    }")
    for i, k in enumerate(kernels):  # kernels launched with clusters above the portable size opt in to them
        if any(needs_nonportable_cluster(l) for l in compiled.launches if l.kernel == k):
            attr = NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            o.append(f"  if ((r = cuFuncSetAttribute(m->functions[{i}], {attr}, 1)) != 0) {{")
            o.append("    cuModuleUnload(m->module); m->module = NULL;")
            o.append('    return ww_driver(r, "cuFuncSetAttribute");')
            o.append("  }")
    o.append("  return 0;")
    o.append("}")
    o.append(f"int32_t {prefix}_Kernel_Module_Unload({prefix}_Kernel_Module_t *m) {{")
    o.append("  int32_t r = 0;")
    o.append('  if (m == NULL || m->module == NULL) return ww_fail(WW_INVALID_VALUE, "the module is not loaded");')
    o.append('  r = ww_driver(cuModuleUnload(m->module), "cuModuleUnload");')
    o.append("  m->module = NULL;")
    o.append("  if (m->retained) { cuDevicePrimaryCtxRelease_v2(0); m->retained = 0; }")
    o.append("  return r;")
    o.append("}")
    # The wrapper.
    o.append(f"int32_t cute_dsl_{prefix}_wrapper({wrapper_params(args, prefix)}) {{")
    o.append("  CUcontext current = NULL;")
    o.append('  if (module == NULL || module->module == NULL) return ww_fail(WW_INVALID_VALUE, '
             f'"the module is not loaded ({prefix}_Kernel_Module_Load)");')
    o.append("  if (cuCtxGetCurrent(&current) == 0 && current == NULL) cuCtxSetCurrent(module->context);")
    checks, symbols, arg_names, fail = _call_checks(compiled, args)
    o += checks
    o += _prints_c(_exported_actions(compiled.host_actions), symbols)
    o += _launches_c(compiled, compiled.launches, kernels, by_index, symbols, arg_names, fail)
    o.append("  return 0;")
    o.append("}")
    if compiled._takes_workspace:
        o += _workspace_size_c(compiled, [a for a in args if a.kind != "workspace"], prefix, kernels, by_index)
    return "\n".join(o) + "\n"


def _call_checks(compiled, args) -> tuple[list, dict, dict, object]:
    """(C lines, symbols, argument names, fail) of what a call checks and computes before its launches: the
    arguments against what was compiled, the host program, the assumptions and the host guards."""
    o: list[str] = []
    symbols: dict[int, str] = {}
    for a in args:
        o += a.plan.c_checks(a, symbols)
    for sid, v in sorted(symbols.items()):
        o.append(f"  const int64_t s{sid} = (int64_t){v};")
    o.append(f"  (void)0;")
    # What the host side computes from the arguments at each call (host_program.py), before any launch.
    arg_names = {a.plan.index: a.name for a in args}
    fail = lambda m: f"ww_fail(WW_INVALID_VALUE, {_c_string(m)})"  # noqa: E731
    o += host_program_c.statements(compiled.host_program, arg_names, fail, _guard_c)
    for sid in host_program_c.defined_symbols(compiled.host_program.entries):
        symbols.setdefault(sid, f"s{sid}")
    used = set()
    for kind, ea, eb, ec, ed, what in assumption_sources(compiled.assumptions):
        exprs = {k: c_expr(e) for k, e in zip("abcd", (ea, eb, ec, ed))}
        for e in (ea, eb, ec, ed):
            used |= symbols_in(e)
        o.append(f"  if (!{_ASSUMPTION_C[int(kind)].format(**exprs)}) return ww_fail(WW_INVALID_VALUE, "
                 f"{_c_string('the arguments break what the kernels assume: ' + what)});")
    for g in compiled.host_guards:
        used |= symbols_in(g.diff)
        o.append("  " + _guard_c(g))
    missing = used - set(symbols)
    if missing:
        raise DSLNotImplementedError(f"export_to_c: the symbols {sorted(missing)} have no C argument", user_location(4))
    return o, symbols, arg_names, fail


def _workspace_size_c(compiled, args, prefix, kernels, by_index) -> list[str]:
    """prefix_Workspace_Size: the checks of a call, then over the launches it would make (host loops and branches
    included) the largest launch's bytes per CTA times its CTAs, as call/workspace.py's needed_bytes."""
    o = [f"int32_t {prefix}_Workspace_Size({workspace_size_params(args, prefix)}) {{",
         '  if (size_in_bytes == NULL) return ww_fail(WW_INVALID_VALUE, "size_in_bytes is NULL");',
         "  int64_t ww_ws = 0;"]
    checks, symbols, arg_names, fail = _call_checks(compiled, args)
    o += checks
    o += _launches_c(compiled, compiled.launches, kernels, by_index, symbols, arg_names, fail, emit=_launch_bytes_c)
    o += ["  *size_in_bytes = (uint64_t)ww_ws;", "  return 0;", "}"]
    return o


def _launch_bytes_c(compiled, l, fi, by_index, symbols) -> list[str]:
    per_cta = int(getattr(l, "workspace", 0))
    if not per_cta:
        return []
    if any(symbols_in(x) - set(symbols) for x in l.grid):
        raise DSLNotImplementedError(f"export_to_c: the grid of {l.kernel} depends on values that the C wrapper does "
                                     "not take", user_location(5))
    g = [c_expr(x) for x in l.grid]
    cond = "(" + " && ".join(f"s{sid}" for sid in l.predicates) + ") && " if l.predicates else ""
    return [f"  {{ const int64_t ww_n = ({g[0]}) * ({g[1]}) * ({g[2]});",
            f"    if ({cond}ww_n > 0) ww_ws = ww_max(ww_ws, INT64_C({per_cta}) * ww_n); }}"]


def _c_bytes(s: str) -> str:
    """s as a C string literal of its UTF-8 bytes (octal escapes outside printable ASCII)."""
    out = []
    for b in s.encode():
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\?' else _OCTAL[b])
    return '"' + "".join(out) + '"'


def _prints_c(actions, symbols) -> list[str]:
    """The host prints of a call (host_actions.HostPrint.c_form), made before its launches as the Python call
    makes them; flushed, so that they come before what the kernels print."""
    o = []
    for a in actions:
        fmt, vals = "", []
        for p in a.c_form:
            if isinstance(p, str):
                fmt += p.replace("%", "%%")
                continue
            if symbols_in(p) - set(symbols):
                raise DSLNotImplementedError("export_to_c: a host print shows values that the C wrapper does not "
                                             "take", user_location(3))
            fmt += "%lld"
            vals.append(f"(long long)({c_expr(p)})")
        o.append(f"  printf({', '.join([_c_bytes(fmt)] + vals)}); fflush(stdout);")
    return o


_GUARD_OPS = {"lt": "< 0", "le": "<= 0", "gt": "> 0", "ge": ">= 0", "eq": "== 0", "ne": "!= 0"}


def _guard_c(g) -> str:
    """The C statement failing a call whose arguments break guard g (host_guards.py)."""
    why = g.describe() if g.divisor else "these arguments decide host code otherwise: " + g.describe()
    return (f"if (({c_expr(g.diff)} {_GUARD_OPS[g.op]}) != {1 if g.outcome else 0}) return "
            f"ww_fail(WW_INVALID_VALUE, {_c_string(why)});")


def _launches_c(compiled, launches, kernels, by_index, symbols, arg_names, fail, depth=0, emit=None) -> list[str]:
    """The launches in the order the Python call makes them (host_loop.launches_of_call): a run of launches in
    the same host loop inside that loop, run again, once per trip, with the trip's values. `emit` writes one
    launch (_launch_c: the launch itself)."""
    emit = emit or _launch_c
    o = []
    for k, loop, j in launch_groups(launches, depth):
        if loop is None:
            o += emit(compiled, launches[k], kernels.index(launches[k].kernel), by_index, symbols)
            continue
        o += host_program_c.loop_c(loop, arg_names, fail, _guard_c, "  ", depth, False, lambda ind, g=launches[k:j]:
                                   _launches_c(compiled, g, kernels, by_index, symbols, arg_names, fail, depth + 1,
                                               emit))
    return o


def _host_argument_c(h, by_index, dst) -> tuple[str, str]:
    """(declarations, statements) of host argument h written at dst, from its producer's C form."""
    a = by_index.get(h.tensor_index)
    if a is None or not isinstance(a.plan, (TensorArg, PointerArg, _workspace.WorkspaceArg)):
        raise DSLNotImplementedError(f"export_to_c: host argument {h.producer.name!r} is computed from an argument "
                                     "the C wrapper does not take as a tensor or a pointer", user_location(4))
    # a runtime attribute is given as its C expression over the wrapper's symbols (s<id>)
    dynamic = {}
    for k, v in h.dynamic.items():
        dynamic[k] = f"({c_expr(v)})"
    decls, code = h.producer.export_c(CTensor(a) if isinstance(a.plan, TensorArg) else CPointer(a), dst, **h.attrs,
                                      **dynamic)
    return decls, code


def _launch_c(compiled, l, fi, by_index, symbols) -> list[str]:
    packer, offsets = compiled._packers[l.kernel]
    size = max(packer.size, 1)
    o = ["  {", f"    /* launch of {l.kernel} */"]
    if l.predicates:  # under a host `if`: made when its branch is taken
        o.insert(0, "  if (" + " && ".join(f"s{sid}" for sid in l.predicates) + ")")
    dims = {}
    for name, vals in (("g", l.grid), ("b", l.block)):
        for j, x in enumerate(vals):
            dims[f"ww_{name}{j}"] = c_expr(x)
            if symbols_in(x) - set(symbols):
                raise DSLNotImplementedError(f"export_to_c: a launch dimension of {l.kernel} depends on values "
                                             "that the C wrapper does not take", user_location(4))
    for n, e in dims.items():
        o.append(f"    const int64_t {n} = {e};")
    o.append(f"    const int64_t ww_smem = {c_expr(l.smem)};")
    o.append("    unsigned char ww_params[" + str(size) + "] __attribute__((aligned(16)));")
    o.append(f"    void *ww_args[{max(len(l.params), 1)}];")
    o.append("    int32_t ww_r;")
    o.append("    if (ww_g0 > 0 && ww_g1 > 0 && ww_g2 > 0) {  /* an empty grid is an empty problem: nothing to launch */")
    o.append("      if (ww_g0 > 0x7fffffff || ww_g1 > 65535 || ww_g2 > 65535 || ww_b0 <= 0 || ww_b1 <= 0 || ww_b2 <= 0 || ww_smem < 0 "
             "|| ww_smem > 0x7fffffff)")
    o.append(f'        return ww_fail(WW_INVALID_VALUE, "kernel {l.kernel}: these arguments give a grid, block or '
             'shared memory size beyond the driver\'s limits");')
    o.append("      memset(ww_params, 0, sizeof ww_params);")
    for j, (p, off) in enumerate(zip(l.params, offsets)):
        if p.kind == "ptr":
            a = by_index[p.source]
            v = a.plan.c_address(a)
            o.append(f"      {{ void *v = {v}; memcpy(ww_params + {off}, &v, sizeof v); }}")
        elif p.kind == "sym":
            o.append(f"      {{ {_param_value(p.fmt, f's{p.source}')}; memcpy(ww_params + {off}, &v, sizeof v); }}")
        elif p.kind == "scalar" and isinstance(p.source, (tuple, list)) and p.source[0] == "derived":
            o.append(f"      {{ {_param_value(p.fmt, f's{p.source[1]}')}; memcpy(ww_params + {off}, &v, sizeof v); }}")
        elif p.kind == "scalar":
            a = by_index[p.source]
            if a.fmt in ("e", "H") and p.fmt in ("e", "H"):
                o.append(f"      {{ uint16_t v = {a.name}; memcpy(ww_params + {off}, &v, sizeof v); }}")
            else:
                o.append(f"      {{ {_param_value(p.fmt, a.name)}; memcpy(ww_params + {off}, &v, sizeof v); }}")
        else:  # a per-call host argument, in the C form of its producer (checked there: check_exportable)
            h = compiled.host_arguments[p.source]
            o.append("      {")
            o.append(_host_argument_c(h, by_index, f"ww_params + {off}")[1])
            o.append("      }")
        o.append(f"      ww_args[{j}] = ww_params + {off};")
    o.append(f"      if (ww_smem > 48 * 1024 && ww_smem > module->max_dynamic_smem[{fi}]) {{")
    o.append(f"        ww_r = cuFuncSetAttribute(module->functions[{fi}], WW_MAX_DYNAMIC_SHARED_SIZE, (int)ww_smem);")
    o.append('        if (ww_r != 0) return ww_driver(ww_r, "cuFuncSetAttribute");')
    o.append(f"        module->max_dynamic_smem[{fi}] = (int32_t)ww_smem;")
    o.append("      }")
    stream = launch_stream(l, by_index)
    cluster = [c_expr(c) for c in l.cluster] if l.cluster else []
    if cluster or needs_launch_options(l):
        attrs = []
        if cluster:
            attrs.append(("WW_ATTR_CLUSTER_DIMENSION", f"clusterDim.x = (unsigned)({cluster[0]}); "
                          f"ww_a[ww_n].value.clusterDim.y = (unsigned)({cluster[1]}); "
                          f"ww_a[ww_n].value.clusterDim.z = (unsigned)({cluster[2]})", None))
        for flag, aid in (("cooperative", "WW_ATTR_COOPERATIVE"),
                          ("pdl", "WW_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION")):
            if getattr(l, flag, False):  # given a Boolean of the arguments (<flag>_symbol): where it holds
                sid = getattr(l, flag + "_symbol", None)
                attrs.append((aid, "cooperative = 1", f"s{sid}" if sid is not None else None))
        pc = getattr(l, "preferred_cluster", None)
        if pc:
            attrs.append(("WW_ATTR_PREFERRED_CLUSTER_DIMENSION", f"clusterDim.x = {int(pc[0])}; "
                          f"ww_a[ww_n].value.clusterDim.y = {int(pc[1])}; ww_a[ww_n].value.clusterDim.z = {int(pc[2])}", None))
        attrs += _event_attributes(l, by_index)
        o.append(f"      {{ ww_CUlaunchAttribute ww_a[{len(attrs)}]; ww_CUlaunchConfig ww_c; unsigned ww_n = 0;")
        o.append("        memset(ww_a, 0, sizeof ww_a); memset(&ww_c, 0, sizeof ww_c);")
        for aid, val, cond in attrs:
            guard = f"if ({cond}) {{ " if cond else ""
            o.append(f"        {guard}ww_a[ww_n].id = {aid}; ww_a[ww_n].value.{val}; ++ww_n;{' }' if guard else ''}")
        o.append("        ww_c.gridDimX = (unsigned)ww_g0; ww_c.gridDimY = (unsigned)ww_g1; ww_c.gridDimZ = (unsigned)ww_g2;")
        o.append("        ww_c.blockDimX = (unsigned)ww_b0; ww_c.blockDimY = (unsigned)ww_b1; ww_c.blockDimZ = (unsigned)ww_b2;")
        o.append(f"        ww_c.sharedMemBytes = (unsigned)ww_smem; ww_c.hStream = {stream}; ww_c.attrs = ww_a; ww_c.numAttrs = ww_n;")
        o.append(f"        ww_r = cuLaunchKernelEx(&ww_c, module->functions[{fi}], ww_args, NULL);")
        o.append("      }")
        call = "cuLaunchKernelEx"
    else:
        o.append(f"      ww_r = cuLaunchKernel(module->functions[{fi}], (unsigned)ww_g0, (unsigned)ww_g1, (unsigned)ww_g2, "
                 f"(unsigned)ww_b0, (unsigned)ww_b1, (unsigned)ww_b2, (unsigned)ww_smem, {stream}, ww_args, NULL);")
        call = "cuLaunchKernel"
    o.append(f'      if (ww_r != 0) return ww_driver(ww_r, "{call} of {l.kernel}");')
    o.append("    }")
    o.append("  }")
    return o


def _event_attributes(l, by_index) -> list[tuple]:
    """(attribute, value, condition) of a launch's event attributes: each where its event argument is not NULL,
    as the Python call gives one only for an event that is not None."""
    out = []
    for what, aid in (("launch_completion_event", "WW_ATTR_LAUNCH_COMPLETION_EVENT"),
                      ("programmatic_event", "WW_ATTR_PROGRAMMATIC_EVENT")):
        ev = getattr(l, what, None)
        if ev is None:
            continue
        name = by_index[ev.arg_index].name
        val = f"event.event = {name}; ww_a[ww_n].value.event.flags = {int(getattr(l, what + '_flags', 0))}"
        if what == "programmatic_event":
            trigger = 1 if getattr(l, "programmatic_event_trigger_at_block_start", False) else 0
            val += f"; ww_a[ww_n].value.event.triggerAtBlockStart = {trigger}"
        out.append((aid, val, f"{name} != NULL"))
    return out
