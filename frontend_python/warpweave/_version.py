"""The package version, apart from the package so that its internals can name it without importing warpweave."""
__version__ = "0.1.0"
