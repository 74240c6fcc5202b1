// A constant offset of an address that inline assembly takes as a plain register and uses only as a whole memory
// operand (`[$n]`) is written into that operand (`[$n+C]`), and the assembly takes the address without it.
//
// An instruction the frontend emits as inline assembly (a backend manifest's template) gets its address as a 32- or
// 64-bit register. The code generator folds a constant offset into the address of the loads and stores it selects
// itself (`[base+C]`), but not into an assembly operand: each of a fragment's addresses (one swizzled base plus a
// constant per matrix) became a register and an addition of its own, where NVIDIA's compiler, which selects those
// matrix loads itself, addresses them as `[base+4096]` and so on from one register (CuTe DSL's sm_120 block-scaled
// GEMMs: 32 stmatrix and 16 ldmatrix addresses of a few bases each). The offset is taken off where the value is a
// chain of constant additions (integer adds, disjoint ors, subtractions, constant-index GEPs, through a
// pointer-integer cast) above a base that is not a constant (a fully constant address stays as it is). The value must
// be a pointer's integer into generic, global or shared memory: an integer that only the template treats as an
// address (tensor memory's lane and column) keeps its offset. The operand must appear in the template only as `[$n]`
// (a register in brackets is an address in every instruction's syntax), so nothing else in the template reads the
// register. Runs after the last optimisation pass; a base-plus-offset computation left without users goes away.
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/ValueHandle.h>
#include <llvm/Transforms/Utils/Local.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// `value` as a non-constant base plus a constant byte offset (the offset may be zero), and whether it is the integer
// of a pointer into memory that loads and stores address (generic, global or shared: an integer that only the
// template knows to be an address, such as a tensor-memory address, keeps its offset).
struct Split {
  llvm::Value* base;
  int64_t offset;
  bool memory_address;
};

bool addressable(unsigned address_space) { return address_space == 0 || address_space == 1 || address_space == 3; }

Split split_offset(llvm::Value* value, const llvm::DataLayout& layout) {
  int64_t offset = 0;
  bool memory_address = false;
  for (int depth = 0; depth < 32; ++depth) {
    if (auto* cast = llvm::dyn_cast<llvm::PtrToIntOperator>(value)) {
      // Only where the integer holds the whole pointer: a truncating cast would wrap differently.
      if (layout.getTypeSizeInBits(cast->getType()) != layout.getTypeSizeInBits(cast->getOperand(0)->getType()))
        break;
      memory_address = addressable(cast->getPointerAddressSpace());
      value = cast->getOperand(0);
      continue;
    }
    if (auto* gep = llvm::dyn_cast<llvm::GEPOperator>(value)) {
      llvm::APInt step(layout.getIndexTypeSizeInBits(gep->getType()), 0);
      if (!gep->accumulateConstantOffset(layout, step) || !step.isSignedIntN(32)) break;
      offset += step.getSExtValue();
      value = gep->getPointerOperand();
      continue;
    }
    auto* op = llvm::dyn_cast<llvm::BinaryOperator>(value);
    if (op == nullptr) break;
    auto* amount = llvm::dyn_cast<llvm::ConstantInt>(op->getOperand(1));
    if (amount == nullptr || !amount->getValue().isSignedIntN(32)) break;
    int64_t c = amount->getSExtValue();
    bool disjoint_or = op->getOpcode() == llvm::Instruction::Or && llvm::cast<llvm::PossiblyDisjointInst>(op)->isDisjoint();
    if (op->getOpcode() == llvm::Instruction::Add || disjoint_or) offset += c;
    else if (op->getOpcode() == llvm::Instruction::Sub) offset -= c;
    else break;
    value = op->getOperand(0);
  }
  return {value, offset, memory_address};
}

// Where the template refers to operand `n`: the offsets of each `$n`, `${n}` or `${n:m}`, and their lengths.
struct Reference {
  size_t at, length;
};

llvm::SmallVector<Reference> references(const std::string& text, unsigned n) {
  llvm::SmallVector<Reference> out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) continue;
    if (text[i + 1] == '$') {  // a literal dollar
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool braced = text[end] == '{';
    if (braced) ++end;
    size_t digits = end;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == digits) continue;
    unsigned number = static_cast<unsigned>(std::stoul(text.substr(digits, end - digits)));
    if (braced) {
      size_t close = text.find('}', end);
      if (close == std::string::npos) continue;
      end = close + 1;
    }
    if (number == n) out.push_back({i, end - i});
    i = end - 1;
  }
  return out;
}

// The template with each reference to operand `n` followed by `+offset`, if every one of them is a whole memory
// operand (`[` before it, `]` after it, blanks aside).
std::optional<std::string> with_offset(const std::string& text, unsigned n, int64_t offset) {
  llvm::SmallVector<Reference> refs = references(text, n);
  if (refs.empty()) return std::nullopt;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (const Reference& ref : refs) {
    size_t before = ref.at;
    while (before > 0 && blank(text[before - 1])) --before;
    size_t after = ref.at + ref.length;
    while (after < text.size() && blank(text[after])) ++after;
    if (before == 0 || text[before - 1] != '[' || after >= text.size() || text[after] != ']') return std::nullopt;
  }
  std::string out;
  size_t done = 0;
  for (const Reference& ref : refs) {
    out.append(text, done, ref.at + ref.length - done);
    out += "+" + std::to_string(offset);
    done = ref.at + ref.length;
  }
  out.append(text, done, std::string::npos);
  return out;
}

// The template's operand number of each call argument; empty when the constraints are of a form not handled here.
llvm::SmallVector<int> operand_numbers(const llvm::InlineAsm& assembly, unsigned arguments) {
  llvm::SmallVector<int> numbers;
  int next = 0;
  for (const llvm::InlineAsm::ConstraintInfo& info : assembly.ParseConstraints()) {
    if (info.Type == llvm::InlineAsm::isClobber) continue;
    if (info.Type == llvm::InlineAsm::isLabel) return {};
    if (info.Type == llvm::InlineAsm::isInput || info.isIndirect) numbers.push_back(next);
    ++next;
  }
  if (numbers.size() != arguments) return {};
  return numbers;
}

bool register_constraint(const llvm::InlineAsm& assembly, unsigned argument) {
  unsigned seen = 0;
  for (const llvm::InlineAsm::ConstraintInfo& info : assembly.ParseConstraints()) {
    if (info.Type == llvm::InlineAsm::isClobber) continue;
    if (!(info.Type == llvm::InlineAsm::isInput || info.isIndirect)) continue;
    if (seen++ != argument) continue;
    return info.Type == llvm::InlineAsm::isInput && !info.isIndirect && info.Codes.size() == 1 &&
           (info.Codes[0] == "r" || info.Codes[0] == "l");
  }
  return false;
}

bool fold(llvm::CallInst& call, const llvm::DataLayout& layout, llvm::SmallVectorImpl<llvm::WeakTrackingVH>& dropped) {
  auto* assembly = llvm::dyn_cast<llvm::InlineAsm>(call.getCalledOperand());
  if (assembly == nullptr) return false;
  llvm::SmallVector<int> numbers = operand_numbers(*assembly, call.arg_size());
  if (numbers.empty()) return false;
  std::string text = assembly->getAsmString().str();
  bool changed = false;
  for (unsigned i = 0; i < call.arg_size(); ++i) {
    llvm::Value* argument = call.getArgOperand(i);
    if (!argument->getType()->isIntegerTy() || llvm::isa<llvm::Constant>(argument)) continue;
    if (!register_constraint(*assembly, i)) continue;
    Split split = split_offset(argument, layout);
    if (split.offset == 0 || !split.memory_address || llvm::isa<llvm::Constant>(split.base)) continue;
    // An address operand's displacement is a signed 32-bit immediate.
    if (split.offset < INT32_MIN || split.offset > INT32_MAX) continue;
    std::optional<std::string> rewritten = with_offset(text, static_cast<unsigned>(numbers[i]), split.offset);
    if (!rewritten) continue;
    llvm::Value* base = split.base;
    if (base->getType() != argument->getType())
      base = base->getType()->isPointerTy()
                 ? llvm::CastInst::Create(llvm::Instruction::PtrToInt, base, argument->getType(), "",
                                          call.getIterator())
                 : nullptr;
    if (base == nullptr) continue;
    text = *rewritten;
    dropped.push_back(argument);
    call.setArgOperand(i, base);
    changed = true;
  }
  if (!changed) return false;
  call.setCalledOperand(llvm::InlineAsm::get(assembly->getFunctionType(), text, assembly->getConstraintString(),
                                             assembly->hasSideEffects(), assembly->isAlignStack(),
                                             assembly->getDialect(), assembly->canThrow()));
  return true;
}

}  // namespace

void fold_offsets_into_asm_addresses(llvm::Module& module) {
  const llvm::DataLayout& layout = module.getDataLayout();
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    llvm::SmallVector<llvm::WeakTrackingVH> dropped;  // an earlier deletion may take a later one's value
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) fold(*call, layout, dropped);
    for (llvm::WeakTrackingVH& value : dropped)
      if (auto* inst = llvm::dyn_cast_or_null<llvm::Instruction>(value))
        llvm::RecursivelyDeleteTriviallyDeadInstructions(inst);
  }
}

}  // namespace ww::compiler::detail
