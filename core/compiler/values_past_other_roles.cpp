// A value merged where a warp role ends, read inside another warp role whose warps never run the first, is replaced
// there by the value that the warps skipping the first role bring: the one from before it.
//
// A warp-specialised kernel shares objects among its roles: CuTe DSL's Blackwell fmha advances one pipeline's state in
// its MMA role (an empty step for the correction epilogue) and in its first softmax role. The branch around the MMA
// role merges the two states (the MMA role's last one and the untouched initial one), and the softmax role starts
// from the merge. Its warps never run the MMA role, so that start is always the initial state (a constant), but the
// assembler cannot know: the merge lives across the whole MMA role, at its 32-register ceiling, and spilled (one
// store before the roles, stores and a reload in the MMA role's loop, reloads in the softmax role's loop).
//
// Which warps reach a block is known from the branches on the warp's index that dominate it: a role's entry (a
// successor reached from that branch, or switch, alone) is entered only by the warps for which the branch goes there
// (the optimiser folds fmha's tests for its second softmax and correction roles into one switch). Each such
// condition is evaluated for every value its source can hold (the thread's index, 0..1023, or a warp-wide broadcast
// of a value made from it, over the values that value takes), so two roles are disjoint only when no value of a
// common source takes both. A merge's incoming edge from a block no warp of the reading role reaches is dropped; when
// one value is left and it dominates the read, the read takes it. Unlike warp_role_values.cpp, a mistake here would
// change results, so every condition must be evaluated exactly: anything not understood counts as reachable by all.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <bitset>
#include <optional>
#include <vector>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

constexpr int kThreads = 1024;  // a block's largest extent along x
using Warps = std::bitset<kThreads>;  // which of a source's possible values (by position) a condition admits

bool is_thread_index(const llvm::Value* value) {
  auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(value);
  return call && call->getIntrinsicID() == llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
}

// A warp-wide broadcast from a fixed lane over the full warp: its result is the value its argument has in another
// thread of the warp.
bool is_broadcast(const llvm::Value* value) {
  auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(value);
  if (!call) return false;
  switch (call->getIntrinsicID()) {
    case llvm::Intrinsic::nvvm_shfl_sync_idx_i32: {
      auto* mask = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(0));
      return mask && mask->isAllOnesValue() && llvm::isa<llvm::ConstantInt>(call->getArgOperand(2)) &&
             llvm::isa<llvm::ConstantInt>(call->getArgOperand(3));
    }
    default:
      return false;
  }
}

// The source of an integer expression: the thread's index or a broadcast, reached through integer arithmetic with
// constants; null when anything else is met.
const llvm::Value* source_of(const llvm::Value* value, int depth = 0) {
  if (depth > 16) return nullptr;
  if (is_thread_index(value) || is_broadcast(value)) return value;
  if (auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) {
    if (!llvm::isa<llvm::TruncInst>(cast) && !llvm::isa<llvm::ZExtInst>(cast) && !llvm::isa<llvm::SExtInst>(cast))
      return nullptr;
    return source_of(cast->getOperand(0), depth + 1);
  }
  if (auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(value)) {
    if (!llvm::isa<llvm::ConstantInt>(cmp->getOperand(1))) return nullptr;
    return source_of(cmp->getOperand(0), depth + 1);
  }
  auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value);
  if (!op) return nullptr;
  const bool constant_rhs = llvm::isa<llvm::ConstantInt>(op->getOperand(1));
  if (constant_rhs) return source_of(op->getOperand(0), depth + 1);
  // Two conditions combined: both must come from the same source.
  if (op->getOpcode() != llvm::Instruction::And && op->getOpcode() != llvm::Instruction::Or) return nullptr;
  const llvm::Value* a = source_of(op->getOperand(0), depth + 1);
  const llvm::Value* b = source_of(op->getOperand(1), depth + 1);
  return a != nullptr && a == b ? a : nullptr;
}

// `value` evaluated with `source` holding `at`; nullopt when it is not such an expression (or divides by zero).
std::optional<llvm::APInt> evaluate(const llvm::Value* value, const llvm::Value* source, const llvm::APInt& at,
                                    int depth = 0) {
  if (depth > 16) return std::nullopt;
  if (value == source) return at;
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(value)) return c->getValue();
  if (auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) {
    auto in = evaluate(cast->getOperand(0), source, at, depth + 1);
    if (!in) return std::nullopt;
    unsigned bits = cast->getType()->getIntegerBitWidth();
    if (llvm::isa<llvm::TruncInst>(cast)) return in->trunc(bits);
    if (llvm::isa<llvm::ZExtInst>(cast)) return in->zext(bits);
    if (llvm::isa<llvm::SExtInst>(cast)) return in->sext(bits);
    return std::nullopt;
  }
  if (auto* cmp = llvm::dyn_cast<llvm::ICmpInst>(value)) {
    auto a = evaluate(cmp->getOperand(0), source, at, depth + 1);
    auto b = evaluate(cmp->getOperand(1), source, at, depth + 1);
    if (!a || !b) return std::nullopt;
    return llvm::APInt(1, llvm::ICmpInst::compare(*a, *b, cmp->getPredicate()));
  }
  auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value);
  if (!op) return std::nullopt;
  auto a = evaluate(op->getOperand(0), source, at, depth + 1);
  auto b = evaluate(op->getOperand(1), source, at, depth + 1);
  if (!a || !b) return std::nullopt;
  unsigned bits = a->getBitWidth();
  switch (op->getOpcode()) {
    case llvm::Instruction::Add: return *a + *b;
    case llvm::Instruction::Sub: return *a - *b;
    case llvm::Instruction::Mul: return *a * *b;
    case llvm::Instruction::And: return *a & *b;
    case llvm::Instruction::Or: return *a | *b;
    case llvm::Instruction::Xor: return *a ^ *b;
    case llvm::Instruction::Shl: return b->uge(bits) ? std::nullopt : std::optional(a->shl(*b));
    case llvm::Instruction::LShr: return b->uge(bits) ? std::nullopt : std::optional(a->lshr(*b));
    case llvm::Instruction::AShr: return b->uge(bits) ? std::nullopt : std::optional(a->ashr(*b));
    case llvm::Instruction::UDiv: return b->isZero() ? std::nullopt : std::optional(a->udiv(*b));
    case llvm::Instruction::SDiv:
      return b->isZero() || (b->isAllOnes() && a->isMinSignedValue()) ? std::nullopt : std::optional(a->sdiv(*b));
    case llvm::Instruction::URem: return b->isZero() ? std::nullopt : std::optional(a->urem(*b));
    default: return std::nullopt;
  }
}

// The values a source can hold, in a fixed order (at most kThreads of them); empty when unknown.
std::vector<llvm::APInt> values_of(const llvm::Value* source) {
  std::vector<llvm::APInt> out;
  if (is_thread_index(source)) {
    for (int t = 0; t < kThreads; ++t) out.emplace_back(32, t);
    return out;
  }
  // A broadcast holds what its argument holds in some thread: the argument's values over its own source.
  auto* call = llvm::cast<llvm::IntrinsicInst>(source);
  const llvm::Value* arg = call->getArgOperand(1);
  const llvm::Value* inner = source_of(arg);
  if (inner == nullptr || inner == source) return {};
  for (const llvm::APInt& v : values_of(inner)) {
    auto r = evaluate(arg, inner, v);
    if (!r) return {};
    if (llvm::none_of(out, [&](const llvm::APInt& o) { return o == *r; })) out.push_back(*r);
  }
  return out;
}

// What is known of the warps that reach a block: per source, the positions of its values they may hold.
using Reach = llvm::SmallVector<std::pair<const llvm::Value*, Warps>, 2>;

bool disjoint(const Reach& a, const Reach& b) {
  for (auto& [source, warps] : a)
    for (auto& [other, other_warps] : b)
      if (source == other && (warps & other_warps).none()) return true;
  return false;
}

class Roles {
 public:
  explicit Roles(llvm::Function& function) : dominators_(function) {
    for (llvm::BasicBlock& block : function) {
      if (auto* sw = llvm::dyn_cast<llvm::SwitchInst>(block.getTerminator())) {
        add_switch(block, *sw);
        continue;
      }
      auto* br = llvm::dyn_cast<llvm::BranchInst>(block.getTerminator());
      if (!br || !br->isConditional()) continue;
      const llvm::Value* source = source_of(br->getCondition());
      if (source == nullptr || !br->getCondition()->getType()->isIntegerTy(1)) continue;
      const std::vector<llvm::APInt>& values = cached_values(source);
      if (values.empty()) continue;
      Warps taken;
      bool known = true;
      for (size_t i = 0; i < values.size() && known; ++i) {
        auto r = evaluate(br->getCondition(), source, values[i]);
        if (!r) known = false;
        else taken[i] = r->isOne();
      }
      if (!known) continue;
      Warps all;
      for (size_t i = 0; i < values.size(); ++i) all[i] = true;
      llvm::BasicBlock* yes = br->getSuccessor(0);
      llvm::BasicBlock* no = br->getSuccessor(1);
      if (yes == no) continue;
      if (yes->getSinglePredecessor() == &block) entries_[yes] = {source, taken};
      if (no->getSinglePredecessor() == &block) entries_[no] = {source, all & ~taken};
    }
  }

  bool any() const { return !entries_.empty(); }
  llvm::DominatorTree& dominators() { return dominators_; }

  // The conditions of every role entry that dominates `block` (itself included), combined per source.
  const Reach& reach(llvm::BasicBlock* block) {
    if (auto it = reach_.find(block); it != reach_.end()) return it->second;
    Reach out;
    for (llvm::DomTreeNode* node = dominators_.getNode(block); node; node = node->getIDom()) {
      auto it = entries_.find(node->getBlock());
      if (it == entries_.end()) continue;
      auto& [source, warps] = it->second;
      auto same = llvm::find_if(out, [&](auto& p) { return p.first == source; });
      if (same == out.end()) out.emplace_back(source, warps);
      else same->second &= warps;
    }
    return reach_[block] = std::move(out);
  }

 private:
  // A switch on the warp's index (the optimiser turns a chain of role tests into one): each successor that only this
  // switch reaches is entered for the values of the cases leading there (the default: those of no case).
  void add_switch(llvm::BasicBlock& block, llvm::SwitchInst& sw) {
    const llvm::Value* source = source_of(sw.getCondition());
    if (source == nullptr) return;
    const std::vector<llvm::APInt>& values = cached_values(source);
    if (values.empty()) return;
    llvm::DenseMap<llvm::BasicBlock*, Warps> taken;
    for (size_t i = 0; i < values.size(); ++i) {
      auto r = evaluate(sw.getCondition(), source, values[i]);
      if (!r) return;
      llvm::BasicBlock* to = sw.getDefaultDest();
      for (auto& c : sw.cases())
        if (c.getCaseValue()->getValue() == *r) to = c.getCaseSuccessor();
      taken[to][i] = true;
    }
    for (llvm::BasicBlock* next : llvm::successors(&block))
      if (next->getUniquePredecessor() == &block) entries_[next] = {source, taken.lookup(next)};
  }

  const std::vector<llvm::APInt>& cached_values(const llvm::Value* source) {
    auto it = values_.find(source);
    if (it == values_.end()) it = values_.try_emplace(source, values_of(source)).first;
    return it->second;
  }

  llvm::DominatorTree dominators_;
  llvm::DenseMap<const llvm::BasicBlock*, std::pair<const llvm::Value*, Warps>> entries_;
  llvm::DenseMap<const llvm::Value*, std::vector<llvm::APInt>> values_;
  llvm::DenseMap<const llvm::BasicBlock*, Reach> reach_;
};

// What `phi` holds for the warps that reach `reader`, through merges whose other incoming edges those warps never take;
// null when more than one value is left.
llvm::Value* value_for(Roles& roles, llvm::PHINode* phi, llvm::BasicBlock* reader, int depth = 0) {
  const Reach at = roles.reach(reader);  // a copy: reach() may grow the map that holds it
  if (at.empty() || depth > 8) return nullptr;
  llvm::Value* left = nullptr;
  for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
    llvm::BasicBlock* from = phi->getIncomingBlock(i);
    if (!roles.dominators().isReachableFromEntry(from)) continue;
    if (disjoint(roles.reach(from), at)) continue;
    llvm::Value* v = phi->getIncomingValue(i);
    if (v == phi) continue;
    if (left != nullptr && left != v) return nullptr;
    left = v;
  }
  if (left == nullptr) return nullptr;
  if (auto* inner = llvm::dyn_cast<llvm::PHINode>(left); inner && inner != phi)
    if (llvm::Value* deeper = value_for(roles, inner, reader, depth + 1)) return deeper;
  return left;
}

llvm::BasicBlock* reading_block(llvm::Use& use) {
  auto* user = llvm::cast<llvm::Instruction>(use.getUser());
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) return phi->getIncomingBlock(use);
  return user->getParent();
}

}  // namespace

void forward_values_past_other_roles(llvm::Module& module) {
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    Roles roles(function);
    if (!roles.any()) continue;
    llvm::SmallVector<llvm::PHINode*> phis;
    for (llvm::BasicBlock& block : function)
      for (llvm::PHINode& phi : block.phis()) phis.push_back(&phi);
    llvm::SmallVector<llvm::PHINode*> emptied;
    for (llvm::PHINode* phi : phis) {
      for (llvm::Use& use : llvm::make_early_inc_range(phi->uses())) {
        llvm::BasicBlock* reader = reading_block(use);
        if (!roles.dominators().isReachableFromEntry(reader)) continue;
        llvm::Value* v = value_for(roles, phi, reader);
        if (v == nullptr || v == phi) continue;
        if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v); inst && !roles.dominators().dominates(inst, use))
          continue;
        use.set(v);
      }
      if (phi->use_empty()) emptied.push_back(phi);
    }
    for (llvm::PHINode* phi : emptied)
      if (phi->getParent() != nullptr && phi->use_empty()) phi->eraseFromParent();
  }
}

}  // namespace ww::compiler::detail
