// Equal warp-wide broadcasts in one block (the same value from the same fixed lane, over the full warp) merged into
// the first, after the last optimisation pass.
//
// A program that makes the warp's index warp-uniform wherever it needs it (CuTe DSL's fmha: once per tensor-memory
// partition of a softmax role) broadcasts the same value several times in a row. The optimiser keeps every copy (the
// broadcast is convergent), so addresses made from them stay apart: fmha's second softmax role stored P through a base
// equal to the one it loads S from, but computed from another copy, and the assembler, at the role's 192-register
// ceiling, kept both across its loop and spilled one (4 bytes stored and reloaded each iteration).
//
// The same instruction over the same operands, with every lane taking part, gives the same result each time it runs:
// the named lane's value of the same SSA operand. Only copies in one block are merged, so no merged value lives
// longer than the block's own (a copy above the warp roles merged with one inside a role would live across them).
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <tuple>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// A broadcast from a fixed lane over the full warp.
bool full_warp_broadcast(const llvm::IntrinsicInst& call) {
  switch (call.getIntrinsicID()) {
    case llvm::Intrinsic::nvvm_shfl_sync_idx_i32:
    case llvm::Intrinsic::nvvm_shfl_sync_idx_f32:
      break;
    default:
      return false;
  }
  auto* mask = llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(0));
  return mask && mask->isMinusOne() && llvm::isa<llvm::ConstantInt>(call.getArgOperand(2)) &&
         llvm::isa<llvm::ConstantInt>(call.getArgOperand(3));
}

}  // namespace

void merge_warp_broadcasts(llvm::Module& module) {
  for (llvm::Function& function : module) {
    for (llvm::BasicBlock& block : function) {
      // key: (intrinsic, value, lane, clamp) -> the first such broadcast in the block
      llvm::DenseMap<std::tuple<unsigned, llvm::Value*, llvm::Value*, llvm::Value*>, llvm::IntrinsicInst*> first;
      for (llvm::Instruction& inst : llvm::make_early_inc_range(block)) {
        auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
        if (!call || !full_warp_broadcast(*call)) continue;
        auto key = std::make_tuple(unsigned(call->getIntrinsicID()), call->getArgOperand(1), call->getArgOperand(2),
                                   call->getArgOperand(3));
        auto [it, inserted] = first.try_emplace(key, call);
        if (inserted) continue;
        call->replaceAllUsesWith(it->second);
        call->eraseFromParent();
      }
    }
  }
}

}  // namespace ww::compiler::detail
