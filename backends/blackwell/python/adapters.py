"""What the Blackwell backend registers with warpweave when it loads."""
from warpweave import ext

# Tensor memory: 32-bit addresses (lane in the high half, column in the low half) in NVPTX address space 6.
TMEM_ADDRESS_SPACE = 6

ext.register_memory_space("tmem", TMEM_ADDRESS_SPACE)
