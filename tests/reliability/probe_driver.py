"""Runs probe cases in this process, one after another, and prints each one's outcome as a JSON line.

    python probe_driver.py <time limit in s> <case.py> [<case.py> ...]

A case is a user program (cutlass names through the alias, as CuTe DSL programs write them) with a `main()`; main's
return value, or the exception it raised, is the outcome; COMPILE_ONLY ("stop" or "skip") in a case runs main
inside warpweave's compile-only mode. The target is the environment's (WARPWEAVE_ARCH). Before each case the driver
prints `PROBE-START <path>`, after it `PROBE-OUTCOME <json>`. A case that overruns the time limit ends the process
(faulthandler's watchdog, which also stops code stuck outside Python); the parent
(test_probe_new_surfaces.py) counts the case that started without an outcome as a hang or a crash, and runs the
cases after it again.
"""
import faulthandler
import importlib.util
import json
import os
import sys
import traceback


def run_one(path: str) -> dict:
    import warpweave
    from warpweave import migrate
    from warpweave._dsl.registry import compile_only

    out = {"path": path, "outcome": "returned"}
    try:
        with migrate.cutlass_alias():
            # Imported as a module of its own, as a user's program is (the function cache finds functions by it).
            name = "probe_case_" + os.path.splitext(os.path.basename(path))[0]
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            namespace = vars(module)
            mode = namespace.get("COMPILE_ONLY")
            if mode:
                with compile_only.compile_only(on_launch=mode):
                    result = namespace["main"]()
            else:
                result = namespace["main"]()
        out["result"] = repr(result)
    except BaseException as e:  # noqa: BLE001 - every outcome is reported, LaunchSkipped included
        out.update(outcome="raised", type=f"{type(e).__module__}.{type(e).__qualname__}",
                   is_dsl_error=isinstance(e, warpweave.DSLError), message=str(e)[:4000],
                   location=list(getattr(e, "location", None) or []) or None,
                   traceback="".join(traceback.format_exception(e))[-4000:])
    return out


def main(argv) -> int:
    limit = float(argv[1])
    for path in argv[2:]:
        path = os.path.abspath(path)
        print("\nPROBE-START " + path, flush=True)
        faulthandler.dump_traceback_later(limit, exit=True)
        out = run_one(path)
        faulthandler.cancel_dump_traceback_later()
        print("\nPROBE-OUTCOME " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
