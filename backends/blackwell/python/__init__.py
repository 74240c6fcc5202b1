"""The Blackwell backend's Python package: mounted as warpweave.backends.blackwell when the plugin loads.

adapters.py (run on load) registers what Blackwell adds to the DSL's model of memory: the tensor memory space
(tcgen05's accumulators live there; LLVM's NVPTX address space 6). The tcgen05 operand kinds, TMEM copies and
blackwell_helpers come with the Blackwell programming model. It imports warpweave's public modules and
warpweave.ext only.
"""
