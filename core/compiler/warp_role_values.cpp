// Values that each warp role of a warp-specialised kernel computes for itself from the kernel's arguments and the
// launch's special registers (a persistent tile scheduler's first tile: the block's index divided by extents passed
// as arguments) are computed again at the top of each role, instead of once before the roles.
//
// Every role of such a kernel starts with the same instructions, so the optimiser hoists them above the branches on
// the warp's index (SimplifyCFG's hoisting of common code, GVN) and the results live across every role. The
// assembler rematerialises neither a special-register read nor a division, and a role that runs at a low register
// ceiling spills them: CuTe DSL's Blackwell mixed_input_gemm with 8-bit A spilled the block's index (one store, six
// reloads) where NVIDIA's compiler, which does not hoist them, keeps each role's copy in registers.
//
// A role is the region that a branch on the warp's index (the thread's index shifted right by 5 or more, possibly
// broadcast across the warp) leads to: a successor of that branch whose only predecessor is the branching block.
// Finding roles decides only where copies go: computing a pure value again in a block its original dominates never
// changes a result, so a branch taken for a role by mistake costs code size, not correctness.
// A value is recomputed when it is free of memory and side effects (no loads, no convergent calls) and made only of
// kernel arguments, constants and such values. When every use of it lies inside a role, each role gets a copy at its
// top (the role innermost around the use) and the original goes away; a value also used outside the roles stays. A role inside a
// loop that does not hold the value gets no copy (the next role out does): that would compute it once per iteration
// instead of once. Innermost, not outermost: a role whose region branches again into roles (a warpgroup's warps at
// register ceilings of their own) would share one copy among them, live across all of them; mamba2_ssd spilled its
// tile count so. Runs after the last optimisation pass, which would hoist the copies again (and
// role_values_kept.cpp keeps the code generator from merging them).
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// Whether `value` is the warp's index within the block, or a value the whole warp derives from it through casts,
// arithmetic with constants and broadcasts: the thread's index divided by a multiple of the warp's width, along the
// way.
bool from_warp_index(const llvm::Value* value, bool divided, int depth = 0) {
  if (depth > 8) return false;
  if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(value)) {
    if (call->getIntrinsicID() == llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x) return divided;
    // A warp-wide exchange of a value the whole warp holds (the broadcast that makes the index warp-uniform): its
    // other arguments are constants.
    bool any = false;
    for (const llvm::Value* arg : call->args()) {
      if (llvm::isa<llvm::Constant>(arg)) continue;
      if (!from_warp_index(arg, divided, depth + 1)) return false;
      any = true;
    }
    return any;
  }
  if (auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) return from_warp_index(cast->getOperand(0), divided, depth + 1);
  auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value);
  if (!op) return false;
  auto* amount = llvm::dyn_cast<llvm::ConstantInt>(op->getOperand(1));
  if (!amount) return false;
  switch (op->getOpcode()) {
    case llvm::Instruction::LShr:
    case llvm::Instruction::AShr:
      return from_warp_index(op->getOperand(0), divided || amount->getZExtValue() >= 5, depth + 1);
    case llvm::Instruction::UDiv:
    case llvm::Instruction::SDiv:
      return from_warp_index(op->getOperand(0), divided || (amount->getZExtValue() % 32 == 0 && !amount->isZero()),
                             depth + 1);
    case llvm::Instruction::Add:
    case llvm::Instruction::Sub:
    case llvm::Instruction::And:
      return from_warp_index(op->getOperand(0), divided, depth + 1);
    default:
      return false;
  }
}

// A condition on the warp's index: a comparison of it with a constant, or such comparisons combined.
bool on_warp_index(const llvm::Value* condition, int depth = 0) {
  if (depth > 4) return false;
  if (auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(condition))
    return llvm::isa<llvm::Constant>(cmp->getOperand(1)) && from_warp_index(cmp->getOperand(0), false);
  if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(condition)) {
    if (op->getOpcode() != llvm::Instruction::And && op->getOpcode() != llvm::Instruction::Or) return false;
    return on_warp_index(op->getOperand(0), depth + 1) && on_warp_index(op->getOperand(1), depth + 1);
  }
  return false;
}

// The blocks where a warp role starts.
llvm::DenseSet<const llvm::BasicBlock*> role_entries(llvm::Function& function) {
  llvm::DenseSet<const llvm::BasicBlock*> entries;
  for (llvm::BasicBlock& block : function) {
    const llvm::Instruction* term = block.getTerminator();
    const llvm::Value* condition = nullptr;
    if (auto* br = llvm::dyn_cast<llvm::BranchInst>(term); br && br->isConditional())
      condition = on_warp_index(br->getCondition()) ? br->getCondition() : nullptr;
    else if (auto* sw = llvm::dyn_cast<llvm::SwitchInst>(term))
      condition = from_warp_index(sw->getCondition(), false) ? sw->getCondition() : nullptr;
    if (!condition) continue;
    for (const llvm::BasicBlock* next : llvm::successors(&block))
      if (next->getSinglePredecessor() == &block) entries.insert(next);
  }
  return entries;
}

bool pure(const llvm::Instruction& inst) {
  if (llvm::isa<llvm::PHINode>(inst) || inst.isTerminator() || inst.isEHPad() || llvm::isa<llvm::AllocaInst>(inst))
    return false;
  if (inst.mayReadOrWriteMemory() || inst.mayHaveSideEffects()) return false;
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) return !call->isConvergent() && !call->isInlineAsm();
  return true;
}

class Recomputer {
 public:
  Recomputer(llvm::Function& function)
      : dominators_(function), loops_(dominators_), entries_(role_entries(function)) {}

  bool any_roles() const { return !entries_.empty(); }

  // Made of arguments, constants and pure instructions of the same kind only (memoised).
  bool recomputable(const llvm::Value* value) {
    if (llvm::isa<llvm::Argument>(value) || llvm::isa<llvm::Constant>(value)) return true;
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    if (!inst) return false;
    if (auto it = known_.find(inst); it != known_.end()) return it->second;
    known_[inst] = false;  // cycles go through phis, which are not pure
    bool ok = pure(*inst) && llvm::all_of(inst->operands(), [&](const llvm::Use& op) { return recomputable(op.get()); });
    known_[inst] = ok;
    return ok;
  }

  void recompute(llvm::Instruction& inst) {
    // Only a value that no use outside the roles keeps alive: otherwise the original still lives across the roles
    // and each copy adds a register where it is used.
    llvm::DenseMap<llvm::BasicBlock*, llvm::SmallVector<llvm::Use*, 4>> by_role;
    for (llvm::Use& use : inst.uses()) {
      llvm::BasicBlock* role = innermost_role(inst.getParent(), reading_block(use));
      if (role == nullptr) return;
      by_role[role].push_back(&use);
    }
    for (auto& [role, uses] : by_role) {
      llvm::Instruction* copy = inst.clone();
      copy->setName(inst.getName());
      // Operands are copied into the role after their users (see run), so each lands above the users before it.
      copy->insertBefore(role->getFirstInsertionPt());
      for (llvm::Use* use : uses) use->set(copy);
    }
    if (inst.use_empty()) inst.eraseFromParent();
  }

 private:
  static llvm::BasicBlock* reading_block(llvm::Use& use) {
    auto* user = llvm::cast<llvm::Instruction>(use.getUser());
    if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) return phi->getIncomingBlock(use);
    return user->getParent();
  }

  // The role entry on the dominator tree's path from `home` (exclusive) down to `block` that is nearest `block`,
  // outside any loop that does not hold `home`; null if none.
  llvm::BasicBlock* innermost_role(llvm::BasicBlock* home, llvm::BasicBlock* block) {
    if (!dominators_.dominates(home, block)) return nullptr;
    for (llvm::DomTreeNode* node = dominators_.getNode(block); node && node->getBlock() != home;
         node = node->getIDom()) {
      llvm::BasicBlock* at = node->getBlock();
      if (!entries_.contains(at)) continue;
      const llvm::Loop* loop = loops_.getLoopFor(at);
      if (loop == nullptr || loop->contains(home)) return at;
    }
    return nullptr;
  }

  llvm::DominatorTree dominators_;
  llvm::LoopInfo loops_;
  llvm::DenseSet<const llvm::BasicBlock*> entries_;
  llvm::DenseMap<const llvm::Instruction*, bool> known_;
};

}  // namespace

std::vector<const llvm::BasicBlock*> warp_role_entries(llvm::Function& function) {
  llvm::DenseSet<const llvm::BasicBlock*> entries = role_entries(function);
  return {entries.begin(), entries.end()};
}

void recompute_values_in_warp_roles(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    Recomputer recomputer(function);
    if (!recomputer.any_roles()) continue;
    // Users before their operands: blocks in post order (successors first), each from its end; a copy's operands
    // are still the originals, which are visited later and copied into the same role above it.
    llvm::SmallVector<llvm::Instruction*> order;
    for (llvm::BasicBlock* block : llvm::post_order(&function.getEntryBlock()))
      for (llvm::Instruction& inst : llvm::reverse(*block))
        if (recomputer.recomputable(&inst)) order.push_back(&inst);
    for (llvm::Instruction* inst : order) recomputer.recompute(*inst);
  }
}

}  // namespace ww::compiler::detail
