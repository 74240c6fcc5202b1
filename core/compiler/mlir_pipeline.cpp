// MLIR text -> LLVM dialect -> llvm::Module. The only translation unit that includes MLIR headers (each one costs
// ~20 s and 1.5 GiB to compile), so everything MLIR lives here.
#include <mlir/Conversion/ArithToLLVM/ArithToLLVM.h>
#include <mlir/Conversion/LLVMCommon/ConversionTarget.h>
#include <mlir/Conversion/LLVMCommon/TypeConverter.h>
#include <mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h>
#include <mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h>
#include <mlir/Conversion/MathToLLVM/MathToLLVM.h>
#include <mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h>
#include <mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h>
#include <mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h>
#include <mlir/Conversion/UBToLLVM/UBToLLVM.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/ControlFlow/IR/ControlFlow.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/LLVMIR/NVVMDialect.h>
#include <mlir/Dialect/LLVMIR/Transforms/Passes.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/Math/Transforms/Passes.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/UB/IR/UBOps.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Parser/Parser.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Export.h>
#include <mlir/Transforms/DialectConversion.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>
#include <mlir/Transforms/Passes.h>
#include <mlir/IR/TypeUtilities.h>

#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/StringSet.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// --- math ----------------------------------------------------------------------------------------------------------
// NVPTX has no libm: apart from exp2 (f32, f16), sqrt, abs, fma, min/max, copysign and the rounding functions, a
// math intrinsic reaching instruction selection is a fatal "Cannot select". So transcendental functions are
// rewritten here, before math-to-llvm: hyperbolic / power functions are expanded into exp and log, and those into
// MLIR's polynomial approximations (f32; f16 and bf16 go through f32). Anything left (f64 transcendentals) is
// reported with its source location instead of failing deep in the back end.
constexpr llvm::StringLiteral kExpandedOps[] = {"sinh", "cosh", "tan", "asinh", "acosh", "atanh",
                                                "powf", "fpowi", "clampf"};

bool approximated(llvm::StringRef op_name) {
  static const llvm::StringSet<> names = {"math.acos", "math.asin", "math.atan",  "math.atan2", "math.cbrt",
                                          "math.cos",  "math.sin",  "math.erf",   "math.erfc",  "math.exp",
                                          "math.expm1", "math.log", "math.log1p", "math.log2",  "math.tanh"};
  return names.contains(op_name);
}

// Math ops whose LLVM intrinsic NVPTX cannot select, whatever the type (exp2 is fine except on f64).
bool needs_libm(mlir::Operation* op) {
  static const llvm::StringSet<> names = {
      "math.acos", "math.asin",  "math.atan", "math.atan2", "math.cbrt",  "math.cos",   "math.sin",
      "math.erf",  "math.erfc",  "math.exp",  "math.expm1", "math.log",   "math.log1p", "math.log2",
      "math.log10", "math.tanh", "math.tan",  "math.sinh",  "math.cosh",  "math.asinh", "math.acosh",
      "math.atanh", "math.powf", "math.fpowi", "math.ipowi"};
  llvm::StringRef name = op->getName().getStringRef();
  if (names.contains(name)) return true;
  if (name == "math.exp2" && op->getNumResults() == 1)
    return mlir::getElementTypeOrSelf(op->getResult(0).getType()).isF64();
  return false;
}

// exp(x) with the `afn` fast-math flag is exp2(x * log2(e)): one multiply and the hardware's ex2 instead of a
// polynomial, as CUDA's __expf does.
struct FastExp : mlir::OpRewritePattern<mlir::math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::ExpOp op, mlir::PatternRewriter& rewriter) const override {
    mlir::Type element = mlir::getElementTypeOrSelf(op.getType());
    if (!mlir::arith::bitEnumContainsAll(op.getFastmath(), mlir::arith::FastMathFlags::afn) ||
        !(element.isF32() || element.isF16()))
      return mlir::failure();
    mlir::Location loc = op.getLoc();
    mlir::TypedAttr log2e = rewriter.getFloatAttr(element, 1.4426950408889634);
    if (auto vector = llvm::dyn_cast<mlir::VectorType>(op.getType()))
      log2e = mlir::DenseElementsAttr::get(vector, llvm::ArrayRef<mlir::Attribute>(log2e));
    mlir::Value scale = mlir::arith::ConstantOp::create(rewriter, loc, log2e);
    mlir::Value scaled = mlir::arith::MulFOp::create(rewriter, loc, op.getOperand(), scale, op.getFastmathAttr());
    rewriter.replaceOpWithNewOp<mlir::math::Exp2Op>(op, scaled, op.getFastmathAttr());
    return mlir::success();
  }
};

// erf on f32 as two polynomials, no division: |x| < 1: erf(x) = x + x * P(x^2); |x| >= 1: erf(x) =
// sign(x) * (1 - 2^Q(min(|x|, 4))), Q approximating log2(erfc). Both are evaluated and one selected (no branch in a
// warp). Within 1.19 ulp of erf over every f32 (the hardware's exp2 adds at most 0.6 ulp to erfc's part). MLIR's
// approximation is a rational one per interval: coefficients chosen by selects and a division, ~2x the instructions.
// Every instruction counts: a GELU epilogue evaluates erf once per accumulator value, one warp per scheduler with
// nothing to hide it behind (CuTe DSL's Hopper FP8 GEMM + GELU: the epilogue is a large part of each tile). So
//  - Q is fitted weighted by erfc (its error matters in proportion to 2^Q): degree 6 is as accurate as an
//    unweighted degree 8 was;
//  - saturation is the clamp of |x| (one min), not a compare and a select: 1 - 2^Q rounds to 1 from 3.92 on, as
//    erf does (2^Q(4) = 2^-25.9 is below half an ulp of 1). The min propagates NaN (NaN falls through Q);
//  - the sign is applied once, to the large branch (the small one carries x's);
//  - exp2 flushes subnormals: 2^Q is used only for 1 <= |x| <= 4, where it is above 2^-26, so the flush changes
//    nothing, and the subnormal-preserving form costs a compare and two predicated multiplies more.
// Coefficients: least-squares fits on Chebyshev nodes of erf(x)/x - 1 over x^2 in [0, 1] and (Lawson-iterated,
// weighted by erfc) of log2(erfc(t)) over t in [1, 4], rounded to f32 and checked in f32 arithmetic (exp2 correctly
// rounded) against erf on every normal f32 below 4.5: 1.19 ulp at most (at 1.005).
constexpr double kErfSmall[] = {0.12837916612625122,    -0.3761262595653534,    0.11283597350120544,
                                -0.02685432881116867,   0.005189312156289816,   -0.0008018855005502701,
                                7.882497448008507e-05};
constexpr double kErfLarge[] = {-0.0005103083012907586, -1.6259750752202469,  -0.9207650120954374,
                                -0.14865150757371837,   0.03145842789313691,  -0.00424095772205324,
                                0.00026772679221687135};
constexpr double kErfSaturated = 4.0;

struct ErfF32 : mlir::OpRewritePattern<mlir::math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::math::ErfOp op, mlir::PatternRewriter& rewriter) const override {
    mlir::Type type = op.getType();
    mlir::Type element = mlir::getElementTypeOrSelf(type);
    if (!element.isF32()) return mlir::failure();
    mlir::Location loc = op.getLoc();
    auto constant = [&](double v) -> mlir::Value {
      mlir::TypedAttr attr = rewriter.getFloatAttr(element, v);
      if (auto vector = llvm::dyn_cast<mlir::VectorType>(type))
        attr = mlir::DenseElementsAttr::get(vector, llvm::ArrayRef<mlir::Attribute>(attr));
      return mlir::arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto horner = [&](llvm::ArrayRef<double> c, mlir::Value u) {
      mlir::Value r = constant(c.back());
      for (size_t i = c.size() - 1; i-- > 0;) r = mlir::math::FmaOp::create(rewriter, loc, r, u, constant(c[i]));
      return r;
    };
    mlir::Value x = op.getOperand();
    mlir::Value a = mlir::math::AbsFOp::create(rewriter, loc, x);
    mlir::Value u = mlir::arith::MulFOp::create(rewriter, loc, x, x);
    mlir::Value small = mlir::math::FmaOp::create(rewriter, loc, x, horner(kErfSmall, u), x);
    mlir::Value clamped = mlir::arith::MinimumFOp::create(rewriter, loc, a, constant(kErfSaturated));
    mlir::Value q = horner(kErfLarge, clamped);
    mlir::Value tail;
    if (llvm::isa<mlir::VectorType>(type))
      tail = mlir::math::Exp2Op::create(rewriter, loc, q);
    else  // the intrinsic is scalar; the frontend's fast exp2 calls the same
      tail = mlir::LLVM::CallIntrinsicOp::create(rewriter, loc, element,
                                                 rewriter.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
                                                 mlir::ValueRange{q})
                 .getOperation()
                 ->getResult(0);
    mlir::Value large = mlir::math::CopySignOp::create(
        rewriter, loc, mlir::arith::SubFOp::create(rewriter, loc, constant(1.0), tail), x);
    mlir::Value is_small =
        mlir::arith::CmpFOp::create(rewriter, loc, mlir::arith::CmpFPredicate::OLT, a, constant(1.0));
    rewriter.replaceOpWithNewOp<mlir::arith::SelectOp>(op, is_small, small, large);
    return mlir::success();
  }
};

struct ApproximateMathPass : mlir::PassWrapper<ApproximateMathPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApproximateMathPass)

  llvm::StringRef getArgument() const final { return "ww-approximate-math"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                    mlir::vector::VectorDialect>();
  }

  mlir::LogicalResult initialize(mlir::MLIRContext* ctx) override {
    mlir::RewritePatternSet set(ctx);
    set.add<FastExp>(ctx, /*benefit=*/2);  // before the polynomial
    set.add<ErfF32>(ctx, /*benefit=*/2);  // before MLIR's rational approximation
    llvm::SmallVector<llvm::StringRef> expanded(std::begin(kExpandedOps), std::end(kExpandedOps));
    mlir::math::populateExpansionPatterns(set, expanded);
    mlir::populateMathF32ExpansionPatterns(set, approximated);
    mlir::populateMathPolynomialApproximationPatterns(set, approximated);
    patterns = std::make_shared<mlir::FrozenRewritePatternSet>(std::move(set));
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    // The greedy driver also folds everything else: skip it for the usual module without math.
    bool has_math = module
                        .walk([](mlir::Operation* op) {
                          return op->getName().getDialectNamespace() == "math" ? mlir::WalkResult::interrupt()
                                                                               : mlir::WalkResult::advance();
                        })
                        .wasInterrupted();
    if (!has_math) return;
    // The program's own divisions, apart from those the approximations below are made of.
    llvm::DenseSet<mlir::Operation*> own_divisions;
    module.walk([&](mlir::arith::DivFOp op) { own_divisions.insert(op.getOperation()); });
    if (mlir::failed(mlir::applyPatternsGreedily(module, *patterns))) return signalPassFailure();
    // An approximation's rational polynomial divides by a denominator that it keeps far from zero and infinity:
    // the quotient may be the hardware's approximate one (2 ulp, a reciprocal and a multiply), as CUDA's libm
    // functions compute it, where an IEEE-rounded division is a ~10-instruction sequence with a range check and a
    // branch to a subroutine (erf in a GEMM's GELU epilogue: one per accumulator value). Rounding that quotient
    // exactly buys nothing: the function is approximated to a few ulp anyway.
    module.walk([&](mlir::arith::DivFOp op) {
      if (own_divisions.contains(op.getOperation())) return;
      mlir::Type element = mlir::getElementTypeOrSelf(op.getType());
      if (!element.isF32() && !element.isF16() && !element.isBF16()) return;
      op.setFastmath(op.getFastmath() | mlir::arith::FastMathFlags::afn);
    });
    bool failed = false;
    module.walk([&](mlir::Operation* op) {
      if (!needs_libm(op)) return;
      op->emitError() << "'" << op->getName() << "' on "
                      << mlir::getElementTypeOrSelf(op->getResult(0).getType())
                      << " has no NVPTX lowering: warpweave approximates transcendental functions for f32, f16 "
                         "and bf16 only (no libdevice)";
      failed = true;
    });
    if (failed) signalPassFailure();
  }

  std::shared_ptr<const mlir::FrozenRewritePatternSet> patterns;
};

// --- to the LLVM dialect ------------------------------------------------------------------------------------------
// Arith, control flow, math, NVVM (the ops with a PTX form but no intrinsic become inline asm), UB and vector in one
// dialect conversion: one walk of the module instead of one per dialect, each of which visits every op and
// checks its legality (for a GEMM's ~7000 ops, most of the lowering time). The patterns are those the separate
// passes use. The vector ops the frontend emits (from_elements, extract of 1-D vectors) convert directly, so the
// vector pass's greedy pre-lowering phase (contractions, transfers, n-D shapes), which also re-folds the whole
// module, is left out.
struct ConvertToLlvmPass : mlir::PassWrapper<ConvertToLlvmPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertToLlvmPass)

  llvm::StringRef getArgument() const final { return "ww-convert-to-llvm"; }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::LLVM::LLVMDialect>();
  }

  mlir::LogicalResult initialize(mlir::MLIRContext* ctx) override {
    converter = std::make_shared<mlir::LLVMTypeConverter>(ctx, mlir::LowerToLLVMOptions(ctx));
    mlir::RewritePatternSet set(ctx);
    mlir::arith::populateArithToLLVMConversionPatterns(*converter, set);
    mlir::cf::populateControlFlowToLLVMConversionPatterns(*converter, set);
    mlir::populateMathToLLVMConversionPatterns(*converter, set);
    mlir::populateNVVMToLLVMConversionPatterns(set);
    mlir::ub::populateUBToLLVMConversionPatterns(*converter, set);
    mlir::populateVectorToLLVMConversionPatterns(*converter, set);
    patterns = std::make_shared<mlir::FrozenRewritePatternSet>(std::move(set));
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::LLVMConversionTarget target(getContext());
    if (mlir::failed(mlir::applyPartialConversion(getOperation(), target, *patterns))) signalPassFailure();
  }

  std::shared_ptr<mlir::LLVMTypeConverter> converter;  // the patterns keep a reference to it
  std::shared_ptr<const mlir::FrozenRewritePatternSet> patterns;
};

// --- diagnostics ---------------------------------------------------------------------------------------------------
void locate(Diagnostic& out, mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColRange>(loc)) {
    out.file = file.getFilename().str();
    out.line = static_cast<int>(file.getStartLine());
    out.col = static_cast<int>(file.getStartColumn());
  } else if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    locate(out, name.getChildLoc());
  } else if (auto call = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    // The tracer records the user's line as the callee and the library frames as callers.
    locate(out, call.getCallee());
    if (out.line == 0) locate(out, call.getCaller());
  } else if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location inner : fused.getLocations()) {
      locate(out, inner);
      if (out.line != 0) break;
    }
  } else if (auto opaque = llvm::dyn_cast<mlir::OpaqueLoc>(loc)) {
    locate(out, opaque.getFallbackLocation());
  }
}

Diagnostic convert(const mlir::Diagnostic& diag, Diagnostic::Severity severity) {
  Diagnostic out;
  out.severity = severity;
  out.message = diag.str();
  locate(out, diag.getLocation());
  return out;
}

Diagnostic::Severity convert(mlir::DiagnosticSeverity severity) {
  switch (severity) {
    case mlir::DiagnosticSeverity::Error: return Diagnostic::Severity::error;
    case mlir::DiagnosticSeverity::Warning: return Diagnostic::Severity::warning;
    case mlir::DiagnosticSeverity::Note: return Diagnostic::Severity::note;
    case mlir::DiagnosticSeverity::Remark: return Diagnostic::Severity::remark;
  }
  return Diagnostic::Severity::error;
}

// Collects every diagnostic of one compile, errors with their notes, so that the error can carry them all.
class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext& ctx)
      : handler_(&ctx, [this](mlir::Diagnostic& diag) {
          auto severity = convert(diag.getSeverity());
          auto& sink = severity == Diagnostic::Severity::error ? errors : others;
          sink.push_back(convert(diag, severity));
          for (const mlir::Diagnostic& note : diag.getNotes())
            sink.push_back(convert(note, Diagnostic::Severity::note));
          return mlir::success();
        }) {}

  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> others;

 private:
  mlir::ScopedDiagnosticHandler handler_;
};

// --- the context and its pipelines ---------------------------------------------------------------------------------
mlir::DialectRegistry make_registry() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
                  mlir::vector::VectorDialect, mlir::ub::UBDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  return registry;
}

void add_lowering_passes(mlir::PassManager& pm, bool line_info) {
  // The module is verified once, after parsing (a malformed op is the frontend's or a plugin's, and is reported
  // at the `verify` stage); the passes' results are not verified again after each pass (for a GEMM's ~7000 ops,
  // as long as a pass), translation and LLVM's verifier check the end result.
  pm.enableVerifier(false);
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(std::make_unique<ApproximateMathPass>());
  pm.addPass(mlir::createSCFToControlFlowPass());
  pm.addPass(std::make_unique<ConvertToLlvmPass>());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  // The ops' locations (the tracer's Python lines) become .loc directives in the PTX. DebugDirectivesOnly, not
  // LineTablesOnly: with the latter NVPTX marks the module ".target ..., debug" and ptxas refuses optimised code.
  if (line_info) {
    mlir::LLVM::DIScopeForLLVMFuncOpPassOptions di;
    di.emissionKind = mlir::LLVM::DIEmissionKind::DebugDirectivesOnly;
    pm.addPass(mlir::LLVM::createDIScopeForLLVMFuncOpPass(di));
  }
}

// One context for the process, reused: creating it and loading the dialects is the expensive part of a small
// compile. Its uniqued attributes and types only grow, so it is renewed every kRenewAfter compiles.
struct MlirState {
  static constexpr int kRenewAfter = 1000;

  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<mlir::PassManager> pipelines[2];  // [line_info]
  int uses = 0;

  mlir::MLIRContext& context() {
    if (!ctx || uses >= kRenewAfter) {
      for (auto& pm : pipelines) pm.reset();
      // Threading disabled: kernels are small, and a thread pool per context is not welcome in a host process.
      ctx = std::make_unique<mlir::MLIRContext>(make_registry(), mlir::MLIRContext::Threading::DISABLED);
      ctx->loadAllAvailableDialects();
      uses = 0;
    }
    ++uses;
    return *ctx;
  }

  mlir::PassManager& pipeline(bool line_info) {
    auto& pm = pipelines[line_info ? 1 : 0];
    if (!pm) {
      pm = std::make_unique<mlir::PassManager>(ctx.get());
      add_lowering_passes(*pm, line_info);
    }
    return *pm;
  }
};

MlirState& state() {
  static MlirState* s = new MlirState;  // never destroyed: compiles may still run during static destruction
  return *s;
}

// The ops left in a module that failed to lower, unless an error already names them. The usual cause is an op
// without an LLVM lowering, which the conversion passes leave behind and reconcile-unrealized-casts then reports
// only as a cast it cannot remove.
void report_unlowered(mlir::ModuleOp module, std::vector<Diagnostic>& out) {
  llvm::StringSet<> seen;
  for (const Diagnostic& d : out) {
    size_t open = d.message.find('\'');
    size_t close = open == std::string::npos ? open : d.message.find('\'', open + 1);
    if (close != std::string::npos) seen.insert(d.message.substr(open + 1, close - open - 1));
  }
  module.walk([&](mlir::Operation* op) {
    llvm::StringRef dialect = op->getName().getDialectNamespace();
    if (dialect == "llvm" || dialect == "nvvm" || dialect == "builtin") return;
    if (!seen.insert(op->getName().getStringRef()).second) return;
    Diagnostic d;
    d.message = "'" + op->getName().getStringRef().str() +
                "' was not lowered to the LLVM dialect (no conversion for this op or for its types)";
    locate(d, op->getLoc());
    out.push_back(std::move(d));
  });
}

}  // namespace

void abandon_mlir_context() {
  MlirState& s = state();
  for (auto& pm : s.pipelines) (void)pm.release();
  (void)s.ctx.release();
}

constexpr const char* kCubinToolAttribute = "ww.cubin_tool";
constexpr const char* kExternsAttribute = "ww.externs";

namespace {

// `ww.externs = [{symbol = "f", bitcode = "/path/lib.bc", sha256 = "..."}, ...]`: the functions the module declares
// for the frontend's cute.extern, and the files defining them (sha256 is there for the module text, which keys the
// compile cache, to change with the file's contents; the linker reads the file itself). Each gets the location of
// its first call, so that what the linker finds wrong is reported at the user's line.
bool take_externs(mlir::ModuleOp module, std::vector<ExternFunction>& externs, std::vector<Diagnostic>& errors) {
  mlir::Attribute attr = module->getAttr(kExternsAttribute);
  if (!attr) return true;
  module->removeAttr(kExternsAttribute);
  auto list = mlir::dyn_cast<mlir::ArrayAttr>(attr);
  auto malformed = [&] {
    errors.push_back(error_diag(std::string("the module attribute ") + kExternsAttribute +
                                " must be an array of {symbol = \"...\", bitcode = \"...\"} dictionaries"));
    return false;
  };
  if (!list) return malformed();
  llvm::StringMap<size_t> index;
  for (mlir::Attribute entry : list) {
    auto dict = mlir::dyn_cast<mlir::DictionaryAttr>(entry);
    auto symbol = dict ? dict.getAs<mlir::StringAttr>("symbol") : nullptr;
    if (!symbol) return malformed();
    ExternFunction fn;
    fn.symbol = symbol.getValue().str();
    if (mlir::Attribute bc = dict.get("bitcode")) {
      auto path = mlir::dyn_cast<mlir::StringAttr>(bc);
      if (!path) return malformed();
      fn.bitcode = path.getValue().str();
    }
    index[fn.symbol] = externs.size();
    externs.push_back(std::move(fn));
  }
  module.walk([&](mlir::LLVM::CallOp call) {
    std::optional<llvm::StringRef> callee = call.getCallee();
    if (!callee) return;
    auto it = index.find(*callee);
    if (it == index.end() || !externs[it->second].file.empty()) return;
    Diagnostic where;
    locate(where, call.getLoc());
    externs[it->second].file = where.file;
    externs[it->second].line = where.line;
    externs[it->second].col = where.col;
  });
  return true;
}

}  // namespace

std::unique_ptr<llvm::Module> lower_to_llvm_ir(std::string_view mlir_text, const CompileOptions& options,
                                               llvm::LLVMContext& llvm_ctx, CompileResult& result,
                                               std::vector<ExternFunction>& externs, Failure& failure,
                                               Stage& stage) {
  Stopwatch watch;
  MlirState& s = state();
  mlir::MLIRContext& ctx = s.context();
  DiagnosticCollector diags(ctx);
  auto fail = [&](Stage at) -> std::unique_ptr<llvm::Module> {
    failure.stage = at;
    if (diags.errors.empty()) diags.errors.push_back(error_diag("failed without a diagnostic"));
    failure.diagnostics.insert(failure.diagnostics.end(), diags.errors.begin(), diags.errors.end());
    failure.diagnostics.insert(failure.diagnostics.end(), diags.others.begin(), diags.others.end());
    return nullptr;
  };

  stage = Stage::parse;
  // Verification is a separate step so that a malformed op is reported as `verify`, not `parse`.
  mlir::ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(
      llvm::StringRef(mlir_text.data(), mlir_text.size()), config, options.source_name);
  if (!module) return fail(Stage::parse);
  // The module's request for a cubin tool is the driver's business, not LLVM's: take it off before lowering.
  if (mlir::Attribute tool = (*module)->getAttr(kCubinToolAttribute)) {
    auto name = mlir::dyn_cast<mlir::StringAttr>(tool);
    if (!name || name.getValue() != "ptxas") {
      diags.errors.push_back(error_diag(std::string("the module attribute ") + kCubinToolAttribute +
                                        " must be \"ptxas\" (the only tool a module can ask for)"));
      return fail(Stage::parse);
    }
    result.requested_cubin_tool = name.getValue().str();
    (*module)->removeAttr(kCubinToolAttribute);
  }
  if (!take_externs(*module, externs, diags.errors)) return fail(Stage::parse);
  stage = Stage::verify;
  if (mlir::failed(mlir::verify(*module))) return fail(Stage::verify);
  result.timings.parse_ms = watch.lap_ms();

  stage = Stage::lower;
  if (mlir::failed(s.pipeline(options.line_info).run(*module))) {
    report_unlowered(*module, diags.errors);
    return fail(Stage::lower);
  }
  // Partial conversions leave an op they cannot lower (e.g. for a type LLVM lacks) in place without complaint;
  // translation would then blame a missing dialect interface. Name the op instead.
  report_unlowered(*module, diags.errors);
  if (!diags.errors.empty()) return fail(Stage::lower);
  if (options.want_optimized_mlir) {
    result.mlir.clear();
    llvm::raw_string_ostream os(result.mlir);
    module->print(os);
  }

  stage = Stage::translate;
  std::unique_ptr<llvm::Module> llvm_module = mlir::translateModuleToLLVMIR(*module, llvm_ctx, "warpweave");
  if (!llvm_module) return fail(Stage::translate);
  result.timings.lower_ms = watch.lap_ms();
  result.warnings.insert(result.warnings.end(), diags.others.begin(), diags.others.end());
  return llvm_module;
}

}  // namespace ww::compiler::detail
