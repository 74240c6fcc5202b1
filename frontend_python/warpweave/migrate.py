"""Running CuTe DSL programs unchanged: `python -m warpweave run prog.py [args]`.

For the run only, an import hook maps CuTe DSL's package names onto warpweave's: `import cutlass`,
`import cutlass.cute as cute`, `from cutlass.cute.runtime import from_dlpack`, `import cutlass.utils.X` give the
very module objects of `warpweave`, `warpweave.cute`, ... (`cutlass.cute is warpweave.cute`). Nothing else is
mapped: `cuda.bindings` stays the real package. The hook is opt-in: the runner installs it in its own process (or
a caller uses `cutlass_alias()` as a context manager); importing warpweave never installs it.

The program runs as `python prog.py args` would run it: `sys.argv` is `[prog.py, args...]`, its directory leads
`sys.path`, and it runs as `__main__`. A notebook (.ipynb) runs its code cells in order in one `__main__`
namespace; IPython magics and shell lines (`%...`, `!...`) are skipped and reported.

With `compile_only` (see `_dsl/registry/compile_only.py`) kernels are compiled for WARPWEAVE_ARCH without a GPU and the
calls that would launch them are not made. A program ends at its first such call; a notebook skips each such call
and goes on. A cell whose check of results fails (AssertionError) after a launch it did not make is reported as
such, apart from the errors: the kernels' results were not computed, so nothing could pass that check.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import linecache
import os
import runpy
import sys
import traceback

from ._dsl.registry import compile_only as co
from ._dsl.registry.target import arch_from_environment

# The alias itself lives in alias_hook.py, which a .pth line also loads (python -m warpweave alias --install).
from .alias_hook import ALIAS, REAL, CutlassAliasFinder, cutlass_alias, install, uninstall  # noqa: F401


# --- running a program ----------------------------------------------------------------------------------------

@contextlib.contextmanager
def _as_program(path: str, args: list[str]):
    """sys.argv and sys.path as `python path args...` has them."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def notebook_cells(path: str) -> list[tuple[int, str]]:
    """(cell index, source) of each code cell of a .ipynb, in order."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        out.append((i, "".join(src) if isinstance(src, list) else src))
    return out


def _strip_magics(source: str) -> tuple[str, list[str]]:
    """The cell without IPython magics and shell escapes (kept as blank lines, so line numbers hold)."""
    kept, skipped = [], []
    for line in source.splitlines():
        if line.lstrip().startswith(("%", "!")):
            skipped.append(line.strip())
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", skipped


class CellResult:
    def __init__(self, index: int, status: str, detail: str = ""):
        self.index = index
        self.status = status  # "ok", "error", "launch skipped" (compile-only)
        self.detail = detail


def run_notebook(path: str, *, on_error: str = "stop", report=print) -> list[CellResult]:
    """Runs the code cells of a notebook in order in one __main__ namespace. Each cell gets a file name of its
    own in linecache (`nb.ipynb#cell3`), so kernels defined in cells find their source and errors name the
    cell's line. on_error: "stop" ends at the first failing cell, "continue" runs the rest."""
    results = []
    main = type(sys)("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        for index, source in notebook_cells(path):
            code, skipped = _strip_magics(source)
            for line in skipped:
                report(f"[warpweave run] cell {index}: skipped the IPython line {line!r}")
            filename = f"{os.path.abspath(path)}#cell{index}"
            linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
            session = co.current()
            not_made = len(session.skipped) if session is not None else 0
            try:
                # dont_inherit: the cell is compiled with its own future flags, not this module's (annotations
                # would become strings).
                exec(compile(code, filename, "exec", dont_inherit=True), main.__dict__)  # noqa: S102
                results.append(CellResult(index, "ok"))
            except co.LaunchSkipped as e:
                msg = str(e).replace("(the program ends here)", "(the rest of the cell is not run)")
                results.append(CellResult(index, "launch skipped", msg))
                report(f"[warpweave run] cell {index}: {msg}")
            except Exception as e:  # noqa: BLE001 - reported per cell, as a notebook would show it
                detail = "".join(traceback.format_exception_only(type(e), e)).strip()
                if isinstance(e, AssertionError) and session is not None and len(session.skipped) > not_made:
                    results.append(CellResult(index, "unchecked", detail))
                    report(f"[warpweave run] cell {index}: a check failed after a launch not made (compile-only: "
                           f"the kernels' results were not computed): {detail.splitlines()[0][:200]}")
                    continue
                results.append(CellResult(index, "error", detail))
                traceback.print_exc()
                if on_error == "stop":
                    break
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return results


def _launch_skipped_behind(e: BaseException):
    """The LaunchSkipped that was ending the program when e was raised (e's context chain), or None."""
    seen = set()
    c = e.__context__
    while c is not None and id(c) not in seen:
        if isinstance(c, co.LaunchSkipped):
            return c
        seen.add(id(c))
        c = c.__context__
    return None


def run_program(path: str, args: list[str] | None = None, *, compile_only: bool = False, arch: str | None = None,
                on_launch: str | None = None, keep_going: bool = False, report=print) -> int:
    """Runs a CuTe DSL program (.py or .ipynb) with `import cutlass` mapped to warpweave; the exit status."""
    args = list(args or [])
    if not os.path.exists(path):
        report(f"warpweave run: no such file: {path}")
        return 2
    if arch:
        os.environ["WARPWEAVE_ARCH"] = arch
    notebook = path.endswith(".ipynb")
    mode = on_launch or ("skip" if notebook else "stop")
    with contextlib.ExitStack() as stack:
        stack.enter_context(cutlass_alias())
        stack.enter_context(_as_program(path, args))
        session = stack.enter_context(co.compile_only(on_launch=mode)) if compile_only else None
        status = 0
        try:
            if notebook:
                results = run_notebook(path, on_error="continue" if keep_going else "stop", report=report)
                failed = [r.index for r in results if r.status == "error"]
                status = 1 if failed else 0
                ended = sum(r.status == "launch skipped" for r in results)
                unchecked = [r.index for r in results if r.status == "unchecked"]
                report(f"[warpweave run] notebook: {len(results)} code cell(s) run, "
                       f"{len(results) - len(failed) - len(unchecked)} without error" +
                       (f" ({ended} ended at a launch not made)" if ended else "") +
                       (f"; checks after launches not made: {', '.join(f'cell {i}' for i in unchecked)}"
                        if unchecked else "") +
                       (f"; failed: {', '.join(f'cell {i}' for i in failed)}" if failed else ""))
            else:
                runpy.run_path(path, run_name="__main__")
        except co.LaunchSkipped as e:
            report(f"[warpweave run] {e}")
        except Exception as e:
            # The program's own `finally` ran as it ended at a launch not made, and checked what the launch would
            # have done (an expected failure that did not happen): the end is the launch's, as a notebook cell's
            # check after a launch not made is not an error.
            skipped = _launch_skipped_behind(e)
            if skipped is None:
                raise
            report(f"[warpweave run] {skipped}")
            report(f"[warpweave run] compile-only: then the program's cleanup raised {type(e).__name__} "
                   f"({e}) checking what that launch would have done; not an error of the compile")
        except SystemExit as e:
            code = e.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
            if not isinstance(code, int) and code is not None:
                report(str(code))
        if session is not None:
            report(session.summary())
            if status == 0 and not session.compiled:
                report("[warpweave run] compile-only: the program compiled no kernel")
        return status


def main(argv: list[str]) -> int:
    """`python -m warpweave run [--compile-only] [--arch sm_80] [--on-launch stop|skip] prog.py [args...]`."""
    p = argparse.ArgumentParser(prog="python -m warpweave run",
                                description="run a CuTe DSL program with `import cutlass` mapped to warpweave")
    p.add_argument("--compile-only", action="store_true",
                   help="compile without a GPU: kernels compile for --arch (or WARPWEAVE_ARCH / CUTE_DSL_ARCH); "
                        "calls that would launch them are not made; torch's CUDA tensors are made in host memory")
    p.add_argument("--arch", help="the target to compile for (e.g. sm_80, sm_90a); sets WARPWEAVE_ARCH")
    p.add_argument("--on-launch", choices=("stop", "skip"),
                   help="compile-only: at the first call that would launch kernels, end the program (or the "
                        "notebook cell) (stop, the default for .py) or skip the call and go on (skip, the default "
                        "for notebooks)")
    p.add_argument("--keep-going", action="store_true",
                   help="notebooks: run the cells after a failing one too (the status still says it failed)")
    p.add_argument("program")
    p.add_argument("args", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    if ns.compile_only and not (ns.arch or arch_from_environment()):
        p.error("--compile-only needs --arch (or WARPWEAVE_ARCH, or CUTE_DSL_ARCH): the target to compile for")
    return run_program(ns.program, ns.args, compile_only=ns.compile_only, arch=ns.arch, on_launch=ns.on_launch,
                       keep_going=ns.keep_going)
