"""A kernel's entry name (base/entry_name.py): the name its launch, its dumps and its machine code share carries the
word the assembler keys its treatment of CuTe DSL's kernels on (an L2 prefetch on asynchronous copies among them:
test_quack_compile.py holds that on QuACK's backward norms), after the jit function's name prefix and the kernel's
own name, as CuTe DSL's entries do."""
import re

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.entry_name import entry_name
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


@cute.kernel
def scale_kernel(x: cute.Tensor):
    x[0] = x[0] * cutlass.Float32(2.0)


@cute.jit
def scale(x: cute.Tensor):
    scale_kernel(x).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_entry_names_carry_the_assemblers_word_and_the_kernels_name():
    with target("sm_90a"):
        compiled = cute.compile(scale, from_dlpack(np.zeros(4, np.float32)))
    (launch,) = compiled.launches
    assert launch.kernel == entry_name("scale_kernel")
    assert "cutlass" in launch.kernel and launch.kernel.endswith("scale_kernel")
    # the machine code's entry is the name the launch looks its function up by
    assert re.findall(r"\.entry (\w+)\(", compiled.info["ptx"]) == [launch.kernel]
