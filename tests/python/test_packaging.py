"""The wheel's description agrees with the tree it is built from (pyproject.toml, cmake/WarpweaveWheel.cmake,
CMakeLists.txt), checked without building one; scripts/test_wheel.sh builds and checks a real wheel."""
import os
import re
import subprocess
import sys
import tomllib

import warpweave

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def test_wheel_version_is_the_package_version():
    """The wheel takes its version from CMakeLists.txt's project(); warpweave.__version__ must say the same."""
    meta = tomllib.loads(_read("pyproject.toml"))
    spec = meta["tool"]["scikit-build"]["metadata"]["version"]
    assert "version" in meta["project"]["dynamic"]
    m = re.search(spec["regex"], _read(spec["input"]))
    assert m, f"{spec['regex']!r} finds no version in {spec['input']}"
    assert m.group("value") == warpweave.__version__


def test_every_installed_python_package_exists():
    """Each folder the wheel's install rules copy as a package is one (an __init__.py), and so is each backend's
    PYTHON_DIR (installed by warpweave_add_backend)."""
    rules = _read("cmake/WarpweaveWheel.cmake")
    dirs = re.findall(r"install\(DIRECTORY \$\{PROJECT_SOURCE_DIR\}/(\S+?)/? DESTINATION", rules)
    assert "frontend_python/warpweave" in dirs and "pipelines/warpweave_pipelines" in dirs, dirs
    for d in dirs:
        if d.endswith("examples"):
            assert os.path.isfile(os.path.join(ROOT, d, "elementwise_add.py")), d
        else:
            assert os.path.isfile(os.path.join(ROOT, d, "__init__.py")), f"{d} is not a package"
    backends = os.path.join(ROOT, "backends")
    for arch in sorted(os.listdir(backends)):
        cml = os.path.join(backends, arch, "CMakeLists.txt")
        if os.path.isfile(cml) and "PYTHON_DIR" in open(cml).read():
            assert os.path.isfile(os.path.join(backends, arch, "python", "__init__.py")), arch


def test_wheel_requires_what_the_package_imports():
    """numpy and protobuf are imported by the package (outside optional paths); the wheel must depend on them."""
    deps = " ".join(tomllib.loads(_read("pyproject.toml"))["project"]["dependencies"])
    for name in ("numpy", "protobuf"):
        assert re.search(rf"\b{name}\b", deps), f"pyproject.toml does not depend on {name}"


def test_sdk_command_names_the_package_sdk_or_says_there_is_none():
    """An installed wheel's package carries the plugin SDK and `python -m warpweave sdk --cmake-dir` names it; a
    checkout's package carries none, and the command fails with a message rather than print a wrong path."""
    pkg = os.path.dirname(os.path.abspath(warpweave.__file__))
    r = subprocess.run([sys.executable, "-m", "warpweave", "sdk", "--cmake-dir"], capture_output=True, text=True)
    if os.path.isfile(os.path.join(pkg, "lib", "cmake", "warpweave", "warpweaveConfig.cmake")):
        assert r.returncode == 0 and r.stdout.strip() == os.path.join(pkg, "lib", "cmake", "warpweave")
    else:
        assert r.returncode == 1 and r.stdout == ""
        assert "no plugin SDK" in r.stderr and "cmake --install" in r.stderr
