// Shared-memory loads stay in the loop iteration the program issued them in.
//
// A software-pipelined loop loads, at the end of iteration i, the shared-memory fragment that iteration i + 1
// computes with (CuTe's register double buffering: the k_block + 1 copy of the last k_block, after the barrier),
// and loads the first one before the loop. After SROA the fragment is a PHI of the two loads, and InstCombine's
// PHI-of-loads fold (foldPHIArgLoadIntoPHI) replaces it with one load of a PHI of the two addresses at the top of
// the loop header: the load moves from the end of iteration i to the start of iteration i + 1, where the first
// instruction that uses it waits for it, once per iteration and in every warp at once (they have just left the
// same barrier). The loop body is one basic block and ptxas does not pipeline across the back edge, so nothing
// hides that latency; CuTe DSL's sgemm ran at 0.86x under us for it.
//
// LLVM has no switch for the fold. It is not made when something that may write memory follows the load in its
// block, so at the start of the pipeline a fence (an empty inline-assembly statement with side effects) is put
// before the branch of each latch of every loop that loads shared memory and already holds a barrier or another
// opaque memory-writing call (fence_wanted), and removed after the last optimisation pass: nothing of it reaches
// the PTX. In between it keeps LLVM from moving memory accesses across the iteration boundary, which is the point.
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

constexpr unsigned kSharedAddressSpace = 3;
// The fence's text: a PTX comment, so that one left behind by mistake would assemble to nothing.
constexpr const char* kFenceText = "// ww loop iteration fence";

// A loop whose iterations the fold could reorder: one that loads shared memory and already holds a call that may
// write any memory (a barrier, cp.async, inline assembly). For such a loop the fence takes nothing from LICM or GVN
// that the call does not already take (no load across it is known unchanged); a loop without one keeps its
// optimisations, and a pipelined shared-memory loop always has its barrier.
bool fence_wanted(const llvm::Loop& loop) {
  bool loads_shared = false, opaque_write = false;
  for (const llvm::BasicBlock* block : loop.blocks())
    for (const llvm::Instruction& inst : *block) {
      if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
        loads_shared |= load->getPointerAddressSpace() == kSharedAddressSpace;
      else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
        opaque_write |= call->mayWriteToMemory() && !call->onlyAccessesArgMemory() &&
                        !call->onlyAccessesInaccessibleMemory();
    }
  return loads_shared && opaque_write;
}

bool is_fence(const llvm::Instruction& inst) {
  const auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
  if (call == nullptr) return false;
  const auto* asm_callee = llvm::dyn_cast<llvm::InlineAsm>(call->getCalledOperand());
  return asm_callee != nullptr && asm_callee->getAsmString() == kFenceText;
}

struct InsertLoopIterationFences : llvm::PassInfoMixin<InsertLoopIterationFences> {
  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
    llvm::LoopInfo& loops = analyses.getResult<llvm::LoopAnalysis>(function);
    llvm::SmallVector<llvm::BasicBlock*> latches;
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      if (!fence_wanted(*loop)) continue;
      loop->getLoopLatches(latches);
    }
    if (latches.empty()) return llvm::PreservedAnalyses::all();
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(function.getContext()), false);
    auto* fence = llvm::InlineAsm::get(type, kFenceText, "~{memory}", /*hasSideEffects=*/true);
    for (llvm::BasicBlock* latch : latches) {
      llvm::Instruction* terminator = latch->getTerminator();
      if (terminator->getPrevNode() != nullptr && is_fence(*terminator->getPrevNode())) continue;  // nested latch
      llvm::CallInst::Create(type, fence, "", terminator->getIterator());
    }
    // Only a call is added: the CFG and the loops are as they were.
    llvm::PreservedAnalyses kept;
    kept.preserveSet<llvm::CFGAnalyses>();
    return kept;
  }
};

struct RemoveLoopIterationFences : llvm::PassInfoMixin<RemoveLoopIterationFences> {
  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager&) {
    llvm::SmallVector<llvm::Instruction*> fences;
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& inst : block)
        if (is_fence(inst)) fences.push_back(&inst);
    for (llvm::Instruction* inst : fences) inst->eraseFromParent();
    if (fences.empty()) return llvm::PreservedAnalyses::all();
    llvm::PreservedAnalyses kept;
    kept.preserveSet<llvm::CFGAnalyses>();
    return kept;
  }
};

}  // namespace

void add_loop_iteration_fences(llvm::PassBuilder& builder) {
  builder.registerPipelineStartEPCallback([](llvm::ModulePassManager& passes, llvm::OptimizationLevel) {
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(InsertLoopIterationFences()));
  });
  builder.registerOptimizerLastEPCallback(
      [](llvm::ModulePassManager& passes, llvm::OptimizationLevel, llvm::ThinOrFullLTOPhase) {
        passes.addPass(llvm::createModuleToFunctionPassAdaptor(RemoveLoopIterationFences()));
      });
}

}  // namespace ww::compiler::detail
