// The copies that the passes before place in each warp role and in each block of their own (warp_role_values.cpp,
// launch_constants.cpp) stay there through code generation.
//
// Those copies are the same instructions on the same operands. The code generator's common-subexpression
// elimination (MachineCSE) has a partial-redundancy step: of two equal instructions in blocks that neither dominates,
// it puts one in the nearest block that dominates both, where that block runs no more often than the two together,
// and the dominated copies then fold into it. Copies of sibling roles (the reads of the grid's extents in each role's
// tile loop, a tile count multiplied from two arguments at each role's top) were so merged back into one above the
// roles, and the value lived across every role again: CuTe DSL's mamba2_ssd (roles at register ceilings from 48 to
// 208) spilled the grid's three extents and the tile count, 16 bytes stored and 136 reloaded under ptxas 13.0.
//
// So, after the last pass before code generation:
// - each read of a launch constant (the grid's, block's and cluster's extents, the shared memory sizes) is an
//   inline-assembly read of that register: the code generator merges no inline assembly;
// - in each warp role, the integer kernel arguments that its instructions of pure arithmetic use are read through
//   the role's own copy (an inline-assembly move at the top of the innermost role around the use): equal
//   computations of sibling roles no longer have equal operands. The copy costs a register move, which the
//   assembler folds.
// The PTX holds the same instructions as before, each where the passes put it. Thread, block and cluster indices
// are left as they are (see launch_constant_register).
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// The PTX name of a launch constant (a special register the same for the whole launch, read again in each block
// that uses it by launch_constants.cpp); null for any other intrinsic. The block's and cluster's indices are left to
// the code generator: its merging of their reads is what launch_constants.cpp leaves them to (CuTe DSL's fmha
// spilled 36 bytes instead of 16 with its two reads of the block's index kept apart).
const char* launch_constant_register(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x: return "%ntid.x";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y: return "%ntid.y";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z: return "%ntid.z";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return "%nctaid.x";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return "%nctaid.y";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return "%nctaid.z";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_x: return "%nclusterid.x";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_y: return "%nclusterid.y";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nclusterid_z: return "%nclusterid.z";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_x: return "%cluster_nctaid.x";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_y: return "%cluster_nctaid.y";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctaid_z: return "%cluster_nctaid.z";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_nctarank: return "%cluster_nctarank";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_dynamic_smem_size: return "%dynamic_smem_size";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_total_smem_size: return "%total_smem_size";
    case llvm::Intrinsic::nvvm_read_ptx_sreg_aggr_smem_size: return "%aggr_smem_size";
    default: return nullptr;
  }
}

void read_special_registers_as_asm(llvm::Function& function) {
  llvm::SmallVector<std::pair<llvm::CallInst*, const char*>> reads;
  for (llvm::BasicBlock& block : function)
    for (llvm::Instruction& inst : block)
      if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst); call && call->getType()->isIntegerTy(32))
        if (const char* reg = launch_constant_register(call->getIntrinsicID())) reads.push_back({call, reg});
  for (auto [call, reg] : reads) {
    auto* type = llvm::FunctionType::get(call->getType(), false);
    auto* asm_read = llvm::InlineAsm::get(type, std::string("mov.u32 $0, ") + reg + ";", "=r",
                                          /*hasSideEffects=*/false);
    auto* read = llvm::CallInst::Create(type, asm_read, {}, call->getName(), call->getIterator());
    read->setDebugLoc(call->getDebugLoc());
    call->replaceAllUsesWith(read);
    call->eraseFromParent();
  }
}

// The inline-assembly move of an integer argument's type, with its operand constraint; null for another type.
llvm::InlineAsm* register_move(llvm::Type* type) {
  const char* text = nullptr;
  const char* constraints = nullptr;
  if (type->isIntegerTy(16)) text = "mov.b16 $0, $1;", constraints = "=h,h";
  else if (type->isIntegerTy(32)) text = "mov.b32 $0, $1;", constraints = "=r,r";
  else if (type->isIntegerTy(64)) text = "mov.b64 $0, $1;", constraints = "=l,l";
  else return nullptr;
  return llvm::InlineAsm::get(llvm::FunctionType::get(type, {type}, false), text, constraints,
                              /*hasSideEffects=*/false);
}

// Pure arithmetic: what the code generator's common-subexpression elimination may merge.
bool mergeable(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::PHINode>(inst) || inst.isTerminator() || inst.isEHPad() || llvm::isa<llvm::AllocaInst>(inst))
    return false;
  if (inst.mayReadOrWriteMemory() || inst.mayHaveSideEffects()) return false;
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) return !call->isInlineAsm();
  return true;
}

void read_arguments_per_role(llvm::Function& function) {
  const std::vector<const llvm::BasicBlock*> listed = warp_role_entries(function);
  if (listed.empty()) return;
  const llvm::DenseSet<const llvm::BasicBlock*> entries(listed.begin(), listed.end());
  llvm::DominatorTree dominators(function);
  // The innermost role around each block (memoised; null outside every role). Not the outermost: a role whose
  // region holds further roles (the default of a switch on the warp's index, branching again) would share one copy
  // among them, which then lives across all of them.
  llvm::DenseMap<const llvm::BasicBlock*, llvm::BasicBlock*> innermost;
  auto role_of = [&](llvm::BasicBlock* block) {
    if (auto it = innermost.find(block); it != innermost.end()) return it->second;
    llvm::BasicBlock* found = nullptr;
    for (llvm::DomTreeNode* node = dominators.getNode(block); node && found == nullptr; node = node->getIDom())
      if (entries.contains(node->getBlock())) found = node->getBlock();
    innermost[block] = found;
    return found;
  };
  for (llvm::Argument& arg : function.args()) {
    llvm::InlineAsm* move = register_move(arg.getType());
    if (move == nullptr) continue;
    llvm::DenseMap<llvm::BasicBlock*, llvm::SmallVector<llvm::Use*, 4>> by_role;
    for (llvm::Use& use : arg.uses()) {
      auto* user = llvm::dyn_cast<llvm::Instruction>(use.getUser());
      if (user == nullptr || !mergeable(*user) || !dominators.isReachableFromEntry(user->getParent())) continue;
      if (llvm::BasicBlock* role = role_of(user->getParent())) by_role[role].push_back(&use);
    }
    for (auto& [role, uses] : by_role) {
      auto* copy = llvm::CallInst::Create(move->getFunctionType(), move, {&arg}, arg.getName(),
                                          role->getFirstInsertionPt());
      for (llvm::Use* use : uses) use->set(copy);
    }
  }
}

}  // namespace

void keep_role_values_in_place(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    read_special_registers_as_asm(function);
    read_arguments_per_role(function);
  }
}

}  // namespace ww::compiler::detail
