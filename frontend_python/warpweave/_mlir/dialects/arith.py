"""`cutlass._mlir.dialects.arith`: constants, integer and float arithmetic, comparisons and conversions on IR values
(DSL numbers are taken as their IR values)."""
from ..._dsl.base.ir_dialects import unknown_op
from ..._dsl.base.ir_ops import (CmpFPredicate, CmpIPredicate, FastMathFlags, RoundingMode, addf, addi, andi,
                                 bitcast, cmpf, cmpi, constant, divf, divsi, divui, extf, extsi, extui, fptosi,
                                 fptoui, index_cast, maximumf, maxnumf, maxsi, maxui, minimumf, minnumf, minsi,
                                 minui, mulf, muli, negf, ori, remsi, remui, select, shli, shrsi, shrui, sitofp,
                                 subf, subi, truncf, trunci, uitofp, xori)

__all__ = ["CmpFPredicate", "CmpIPredicate", "FastMathFlags", "RoundingMode", "addf", "addi", "andi", "bitcast",
           "cmpf", "cmpi", "constant", "divf", "divsi", "divui", "extf", "extsi", "extui", "fptosi", "fptoui",
           "index_cast", "maximumf", "maxnumf", "maxsi", "maxui", "minimumf", "minnumf", "minsi", "minui", "mulf",
           "muli", "negf", "ori", "remsi", "remui", "select", "shli", "shrsi", "shrui", "sitofp", "subf", "subi",
           "truncf", "trunci", "uitofp", "xori"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("arith", name, __all__)
