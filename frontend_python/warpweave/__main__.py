"""python -m warpweave COMMAND: the project's command-line entry points."""
import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m warpweave")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="print a short tour of the layout algebra")
    sub.add_parser("main", help="the main job: the demo, then the examples (run on a GPU, else compiled)")
    args = parser.parse_args(argv)
    if args.command in ("demo", "main"):
        from ._demo import layout_demo
        layout_demo()
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
