"""What the consumer Blackwell backend registers with warpweave when it loads (see the package's docstring)."""
from warpweave import ext

from . import mma_ops

for _name, _cls in mma_ops.make_op_classes().items():
    ext.register_python_name(f"warp.{_name}", _cls)
ext.register_python_name("warp.MXF8F6F4_SUPPORTED_PAIRS", mma_ops.MXF8F6F4_SUPPORTED_PAIRS)
