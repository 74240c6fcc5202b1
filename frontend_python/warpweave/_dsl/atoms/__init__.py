"""Layer 4, atoms and tiled operations: instructions of the backends' manifests emitted into the IR, operand kinds,
host arguments, copy and MMA atoms, tiled copies and MMAs. Imports the layers below."""
