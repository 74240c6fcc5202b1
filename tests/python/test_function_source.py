"""The preprocessor's reading of a function's source (tracing/function_source.py) parses to what Python's inspect
reads for it, on functions whose ends are hard to find from their code: statements after the last instruction (an
`else: pass`, a bare annotation, a trailing string spanning lines with text at column 0), comments and blank lines,
decorators over several lines, nested and one-line functions."""
import ast
import importlib.util
import inspect
import textwrap

import pytest

from warpweave._dsl.tracing.function_source import source_tree

MODULE = '''
import functools


def deco(*a, **k):
    return lambda f: f


@deco(
    1,
    key=2,
)
def decorated(x):
    y = x + 1
    if y:
        return y
    else:
        pass
    # a comment at the body's level

    # and one after a blank line


def annotated(x):
    for i in range(x):
        x += i
    z: int


def trailing_string(x):
    x = x * 2
    """a string
with text at column 0
    """


def trailing_annotation(x):
    x = x * 2
    z: """an annotation, never evaluated (no code)
with text at column 0"""


def one_liner(x): return x


class Holder:
    @staticmethod
    def method(x, y=(1,
                     2)):
        def inner(z):
            return [
                z,
            ]
        return inner(x)

    @functools.lru_cache(maxsize=None)
    def cached(self):
        if self:
            pass
after = 1
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "function_source_sample.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("function_source_sample", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _inspect_tree(fn):
    lines, first = inspect.getsourcelines(fn)
    return ast.parse("\n" * (first - 1) + textwrap.dedent("".join(lines)))


@pytest.mark.parametrize("name", ["decorated", "annotated", "trailing_string", "trailing_annotation", "one_liner", "Holder.method",
                                  "Holder.cached", "Holder.method.inner"])
def test_the_source_parses_as_inspect_reads_it(module, name, monkeypatch):
    fn = module
    for part in name.split("."):
        if part == "inner":
            fn = next(c for c in fn.__code__.co_consts if hasattr(c, "co_name") and c.co_name == "inner")
            fn = type(module.deco)(fn, module.__dict__)
        else:
            fn = inspect.unwrap(getattr(fn, part))
    read_by_inspect = []
    getsourcelines = inspect.getsourcelines
    monkeypatch.setattr(inspect, "getsourcelines", lambda f: read_by_inspect.append(f) or getsourcelines(f))
    tree, filename = source_tree(fn)
    monkeypatch.undo()
    # only a text cut inside a string that no instruction reaches is left to inspect's tokenizer
    assert bool(read_by_inspect) == (name == "trailing_annotation")
    assert filename == inspect.getsourcefile(fn)
    assert ast.dump(tree, include_attributes=True) == ast.dump(_inspect_tree(fn), include_attributes=True)
    assert isinstance(tree.body[0], ast.FunctionDef) and tree.body[0].name == name.split(".")[-1]


def test_a_function_without_a_file_is_refused_as_inspect_refuses_it():
    ns = {}
    exec(compile("def f(x):\n    return x\n", "<nowhere>", "exec"), ns)
    with pytest.raises(OSError):
        source_tree(ns["f"])
