"""A kernel's entry name in the machine code: the name its launches, its exports and its dumps know it by.

NVIDIA's assembler compiles an entry whose name contains the word "cutlass" (lower case, anywhere in the name)
otherwise than the same PTX under another name. Seen with the assemblers of CUDA 13.0 and 13.4 for sm_90a on QuACK's
RMSNorm and LayerNorm backward kernels: their 8-byte asynchronous global-to-shared copies, issued in a loop over rows,
get a 128-byte L2 prefetch under such a name and none under a plain one, and registers are allocated otherwise.
CuTe DSL names every entry kernel_cutlass_<function>_..., so each of its kernels is assembled that way; those two
kernels ran at 0.955x and 0.988x of CuTe DSL's speed on an H100 under our plain names, with the prefetch the one
difference in their copies. Our entries carry the same word, so that the assembler treats them as it treats the
reference's.
"""

ENTRY_PREFIX = "kernel_cutlass_"


def entry_name(base: str) -> str:
    """The entry's name for a kernel called `base` (its function's name, after a jit function's name prefix)."""
    return ENTRY_PREFIX + base


def function_name(entry: str) -> str:
    """The name `entry` was made from (entry_name's inverse; a name without the prefix is returned as it is): what
    messages to users call a kernel, the name of their own function."""
    return entry[len(ENTRY_PREFIX):] if entry.startswith(ENTRY_PREFIX) else entry
