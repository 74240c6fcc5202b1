"""Primitives: packed f32x2 arithmetic and grid dependency control."""
from __future__ import annotations

from manifest_builder import entry, operand as op


def arithmetic_and_grid_primitives():
    """Two f32 values in one 64-bit register pair per instruction (sm_100 on), and programmatic dependent launch.
    The f32x2 forms take and give (x, y) pairs of f32 values; round to nearest even."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731

    def pair(name, direction="IN"):
        return op(name, "REGISTERS", direction, element_type="f32", values=2, registers=2, register_type="f32")

    for name, n_in in (("add", 2), ("sub", 2), ("mul", 2), ("fma", 3)):
        ins = ["a", "b", "c"][:n_in]
        movs = " ".join(f"mov.b64 ww_{x}, {{${2 + 2 * i}, ${3 + 2 * i}}};" for i, x in enumerate(ins))
        regs = ", ".join(f"ww_{x}" for x in ins)
        what = "a * b + c" if name == "fma" else {"add": "a + b", "sub": "a - b", "mul": "a * b"}[name]
        sass = [{"add": "FADD2", "sub": "FADD2", "mul": "FMUL2", "fma": "FFMA2"}[name]]
        yield P(id=f"blackwell.{name}.rn.f32x2", kind="OTHER",
                description=f"{name}.rn.f32x2: {what} on two f32 values at once",
                python_name=f"arch.{name}_packed_f32x2",
                operands=[pair("d", "OUT")] + [pair(x) for x in ins],
                ptx_template=("{ .reg .b64 ww_d, " + regs + "; " + movs + f" {name}.rn.f32x2 ww_d, {regs}; "
                              "mov.b64 {$0, $1}, ww_d; }"),
                constraints=",".join(["=f", "=f"] + ["f"] * (2 * n_in)), sass_opcodes=sass)
        # the same with a rounding mode of the caller's (CuTe DSL's rnd=: toward zero, minus or plus infinity)
        yield P(id=f"blackwell.{name}.rnd.f32x2", kind="OTHER",
                description=f"{name}.<rnd>.f32x2: {what} on two f32 values at once, rounded as the attribute rnd says",
                python_name=f"arch.{name}_packed_f32x2", python_params={"rounding": "attribute"},
                operands=[pair("d", "OUT")] + [pair(x) for x in ins],
                attributes=[{"name": "rnd", "type": "string", "allowed": ["rn", "rz", "rm", "rp"],
                             "default_value": "rn"}],
                ptx_template=("{ .reg .b64 ww_d, " + regs + "; " + movs + f" {name}.{{rnd}}.f32x2 ww_d, {regs}; "
                              "mov.b64 {$0, $1}, ww_d; }"),
                constraints=",".join(["=f", "=f"] + ["f"] * (2 * n_in)), sass_opcodes=sass)
    yield P(id="blackwell.griddepcontrol.wait", kind="WAIT",
            description=("griddepcontrol.wait: waits until the grids this one depends on have completed and their "
                         "memory operations are visible (a no-op when launched without a dependency)"),
            python_name="arch.griddepcontrol_wait", ptx_template="griddepcontrol.wait;", has_side_effects=True,
            sass_opcodes=["ACQBULK"])
    yield P(id="blackwell.griddepcontrol.launch_dependents", kind="OTHER",
            description=("griddepcontrol.launch_dependents: lets the grids that depend on this one be scheduled once "
                         "every CTA of this grid has issued it or exited"),
            python_name="arch.griddepcontrol_launch_dependents", ptx_template="griddepcontrol.launch_dependents;",
            has_side_effects=True, sass_opcodes=["PREEXIT"])
