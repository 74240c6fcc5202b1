"""python -m warpweave COMMAND: the project's command-line entry points."""
import argparse
import importlib.util
import os
import sys

# The conformance suite is a package of its own (conformance/warpweave_conformance), installed with the wheel or on
# the path of a checkout (scripts/setup.sh's warpweave.pth, or PYTHONPATH).
from warpweave_conformance import cli as conformance_cli

from . import alias_hook, migrate
from ._demo import layout_demo

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# An installed wheel carries the examples inside the package; a checkout has them beside it (frontend_python/).
EXAMPLES = next((d for d in (os.path.join(_PACKAGE, "examples"), os.path.join(os.path.dirname(_PACKAGE), "examples"))
                 if os.path.isdir(d)), os.path.join(os.path.dirname(_PACKAGE), "examples"))

# The examples the main job runs (on a GPU) or compiles for every target (without one), with their arguments.
MAIN_EXAMPLES = [
    ("elementwise_add", ["--M", "3", "--N", "12"]),
    ("elementwise_add", ["--M", "1000", "--N", "1003"]),
    ("elementwise_add", ["--M", "2048", "--N", "2048", "--dtype", "Float16"]),
    ("tensorop_gemm", ["--mnkl", "112,136,40,1"]),
    ("tensorop_gemm", ["--mnkl", "1000,520,264,2", "--ab_dtype", "BFloat16", "--c_dtype", "BFloat16",
                       "--a_major", "k", "--b_major", "k", "--tolerance", "2e-2"]),
    ("sgemm", ["--mnk", "300,200,100"]),
    # sm_90a only (its TMA and warpgroup MMA exist there): run on a Hopper GPU, else compiled for sm_90a.
    ("hopper/dense_gemm", ["--mnkl", "200,136,264,2"]),
    ("hopper/dense_gemm", ["--mnkl", "264,136,200,1", "--cluster_shape_mn", "2,1", "--a_major", "m"]),
]


def _example(name):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_main_job() -> int:
    layout_demo()
    for name, args in MAIN_EXAMPLES:
        print(f"\n$ python {name}.py {' '.join(args)}")
        rc = _example(name).main(args)
        if rc:
            return rc
    return 0


def _sdk_main(args) -> int:
    """The SDK an installed wheel carries (cmake/WarpweaveWheel.cmake): warpweave/lib/cmake/warpweave and
    warpweave/include. A checkout has none (`cmake --install build --prefix <dir>` makes one)."""
    cmake_dir = os.path.join(_PACKAGE, "lib", "cmake", "warpweave")
    if not os.path.isfile(os.path.join(cmake_dir, "warpweaveConfig.cmake")):
        print(f"python -m warpweave sdk: this warpweave ({_PACKAGE}) has no plugin SDK: it is not an installed wheel; "
              "`cmake --install <build> --prefix <dir>` installs one from a build", file=sys.stderr)
        return 1
    if args.cmake_dir:
        print(cmake_dir)
    elif args.include_dir:
        print(os.path.join(_PACKAGE, "include"))
    elif args.prefix:
        print(_PACKAGE)
    else:
        print(f"find_package(warpweave): cmake -Dwarpweave_DIR={cmake_dir} ...  (or -DCMAKE_PREFIX_PATH={_PACKAGE})")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:  # its own arguments follow the program's path unparsed (migrate.py)
        return migrate.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m warpweave")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="print a short tour of the layout algebra")
    sub.add_parser("main", help="the main job: the demo, then the examples (run on a GPU, else compiled)")
    sub.add_parser("run", help="run a CuTe DSL program with `import cutlass` mapped to warpweave "
                               "(python -m warpweave run [--compile-only --arch sm_80] prog.py args...)")
    alias = sub.add_parser("alias", help="`import cutlass` as warpweave in every Python process of this environment "
                                         "(a .pth file in its site-packages); without an option, whether it is")
    alias_what = alias.add_mutually_exclusive_group()
    alias_what.add_argument("--install", action="store_true", help="write the .pth file")
    alias_what.add_argument("--uninstall", action="store_true", help="remove it")
    alias_where = alias.add_mutually_exclusive_group()
    alias_where.add_argument("--site-dir", help="this folder instead of the environment's site-packages")
    alias_where.add_argument("--user", action="store_true", help="the user's site-packages (site.USER_SITE)")
    sdk = sub.add_parser("sdk", help="where the plugin SDK of this installation is (for find_package(warpweave))")
    sdk_what = sdk.add_mutually_exclusive_group()
    sdk_what.add_argument("--cmake-dir", action="store_true", help="the folder of warpweaveConfig.cmake (warpweave_DIR)")
    sdk_what.add_argument("--prefix", action="store_true", help="a CMAKE_PREFIX_PATH entry that finds it")
    sdk_what.add_argument("--include-dir", action="store_true", help="the plugin ABI headers")
    conformance_cli.add_plugins_parser(sub)
    conformance_cli.add_conformance_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        layout_demo()
        return 0
    if args.command == "main":
        return run_main_job()
    if args.command == "sdk":
        return _sdk_main(args)
    if args.command == "alias":
        return alias_hook.alias_main(args)
    if args.command == "plugins":
        return conformance_cli.plugins_main(args)
    if args.command == "conformance":
        return conformance_cli.conformance_main(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
