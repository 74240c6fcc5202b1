// Reads of the values that are the same for a whole launch (the grid's, block's and cluster's extents, the shared
// memory sizes) are made again where they are used, instead of once at the kernel's entry.
//
// Those reads have no side effects, so the optimiser merges them all into one read at the entry (EarlyCSE, GVN), and
// the value lives across the whole kernel. In a warp-specialised kernel that spans every warp role: the assembler
// does not rematerialise it, and where a role runs at its register ceiling it spills it to local memory. CuTe DSL's
// Blackwell mixed_input_gemm, whose persistent tile scheduler starts in each role from the block's index and steps
// by the grid's depth, spilled the grid's depth (a 4-byte store reloaded five times; with 8-bit A, the block's index
// too, which this pass no longer covers (see launch_constant): warp_role_values.cpp computes it again in each role). Each use's block now reads the value itself (a constant-bank or uniform special-register read); a use inside
// a loop that does not hold the original read gets its read in the preheader of the outermost such loop, as the
// optimiser had hoisted it. Thread indices are left alone: they differ per thread and feed most addresses, so a read
// in every block would only add latency. Runs after the last optimisation pass, which would merge the reads again.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

bool launch_constant(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_x:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_x:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctarank:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_dynamic_smem_size:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_total_smem_size:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_aggr_smem_size:
      return true;
    // The block's and cluster's indices are left where the optimiser put them: read again in each block they put
    // uniform-register moves between the back-to-back warpgroup MMAs of Hopper's peeled first k-tile (its SASS test).
    default:
      return false;
  }
}

// Where a use reads the value: before its instruction, or, for a phi, at the end of the incoming block.
llvm::Instruction* reading_point(llvm::Use& use) {
  auto* user = llvm::cast<llvm::Instruction>(use.getUser());
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) return phi->getIncomingBlock(use)->getTerminator();
  return user;
}

// The block where a use's own read goes: the use's block, or the preheader of the outermost loop around it that does
// not hold the original read; null where that loop has no preheader (the use keeps the original read).
llvm::BasicBlock* reading_block(llvm::BasicBlock* block, llvm::BasicBlock* home, const llvm::LoopInfo& loops) {
  llvm::BasicBlock* at = block;
  for (llvm::Loop* loop = loops.getLoopFor(block); loop != nullptr && !loop->contains(home);
       loop = loop->getParentLoop())
    at = loop->getLoopPreheader();
  return at;
}

void rematerialize(llvm::CallInst& read, const llvm::LoopInfo& loops) {
  llvm::DenseMap<llvm::BasicBlock*, llvm::SmallVector<llvm::Use*, 4>> by_block;
  for (llvm::Use& use : read.uses()) {
    llvm::BasicBlock* block = reading_block(reading_point(use)->getParent(), read.getParent(), loops);
    if (block != nullptr && block != read.getParent()) by_block[block].push_back(&use);
  }
  for (auto& [block, uses] : by_block) {
    // Right before the block's first use, or at its end where the uses are in loops below it.
    llvm::Instruction* first = block->getTerminator();
    for (llvm::Instruction& inst : *block) {
      if (llvm::any_of(uses, [&](llvm::Use* use) { return reading_point(*use) == &inst; })) {
        first = &inst;
        break;
      }
    }
    llvm::Instruction* again = read.clone();
    again->insertBefore(first->getIterator());
    for (llvm::Use* use : uses) use->set(again);
  }
  if (read.use_empty()) read.eraseFromParent();
}

}  // namespace

void rematerialize_launch_constants(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    llvm::SmallVector<llvm::CallInst*> reads;
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst); call && launch_constant(call->getIntrinsicID()))
          reads.push_back(call);
    if (reads.empty()) continue;
    llvm::DominatorTree dominators(function);
    llvm::LoopInfo loops(dominators);
    for (llvm::CallInst* read : reads) rematerialize(*read, loops);
  }
}

}  // namespace ww::compiler::detail
