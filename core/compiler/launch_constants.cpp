// Reads of the launch's constants (grid, block and cluster extents; the shared memory sizes) are made again in each
// block that uses them, instead of once at the kernel's entry.
//
// Those reads have no side effects, so the optimiser merges them all into one read at the entry (EarlyCSE, GVN) and
// the value lives across the whole kernel. In a warp-specialised kernel that spans every warp role: the assembler
// does not rematerialise it, and where a role runs at its register ceiling it spills the value to local memory
// (CuTe DSL's Blackwell mixed_input_gemm: the grid's depth, read by each role's tile scheduler, was a 4-byte spill
// reloaded five times). Each is one read of the constant bank, so a read per block costs nothing, and it is what
// NVIDIA's own compiler emits for the same program. Runs after the last optimisation pass, which would merge the
// reads again. Thread and block indices are left alone: those are special-register reads with a latency, which the
// optimiser is right to hoist out of loops.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
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

void rematerialize(llvm::CallInst& read) {
  // Per block, the use that comes first: the block's own read goes right before it.
  llvm::DenseMap<llvm::BasicBlock*, llvm::SmallVector<llvm::Use*, 4>> by_block;
  for (llvm::Use& use : read.uses()) {
    llvm::BasicBlock* block = reading_point(use)->getParent();
    if (block != read.getParent()) by_block[block].push_back(&use);
  }
  for (auto& [block, uses] : by_block) {
    llvm::Instruction* first = nullptr;
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
    for (llvm::CallInst* read : reads) rematerialize(*read);
  }
}

}  // namespace ww::compiler::detail
