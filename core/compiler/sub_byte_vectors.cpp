// Elements of sub-byte integer vectors are read as bit fields of an integer, not as vector elements.
//
// A register fragment of 4-bit integers that the program copies in as bytes and reads one element at a time (a
// mixed-input GEMM's int4 operand, read nibble by nibble for its conversion) becomes, after SROA and InstCombine,
// a load of <8 x i4> and extractelements of it. NVPTX has no sub-byte vector type: the type legalizer extracts such
// elements through a stack temporary and folds the temporary away afterwards, but the stack object stays in the
// frame, so the kernel declares a local-memory frame it never touches (64 bytes in CuTe DSL's mixed_input_gemm, 192
// in its grouped variant with accumulator scales), which ptxas reserves as stack for every thread. Rewriting the
// extracts in the IR is not enough: the DAG combiner turns a truncated shift of a bitcast vector back into a vector
// element extract. So after the last optimisation pass each such vector gets an integer view that holds no vector
// at all where it can: a load of the vector becomes a load of the integer (or of 32-bit words when wider than 64
// bits), a bitcast from a non-vector value is taken from that value, and each extract becomes a shift and a
// truncation of the view.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

// A fixed vector of iK, 1 < K < 8: the element types NVPTX cannot keep as vector elements. (Vectors of i1 are
// predicates, which it handles.)
bool sub_byte_vector(llvm::Type* type) {
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (vector == nullptr || !vector->getElementType()->isIntegerTy()) return false;
  unsigned bits = vector->getElementType()->getIntegerBitWidth();
  return bits > 1 && bits < 8;
}

unsigned total_bits(llvm::FixedVectorType* type) {
  return type->getNumElements() * type->getElementType()->getIntegerBitWidth();
}

// The integer view of a vector: one integer up to 64 bits; 32-bit words above, when no element straddles two.
llvm::Type* view_type(llvm::FixedVectorType* type) {
  llvm::LLVMContext& context = type->getContext();
  unsigned bits = total_bits(type), element = type->getElementType()->getIntegerBitWidth();
  if (bits <= 64) return llvm::IntegerType::get(context, bits);
  if (bits % 32 == 0 && 32 % element == 0)
    return llvm::FixedVectorType::get(llvm::Type::getInt32Ty(context), bits / 32);
  return nullptr;
}

class Rewriter {
 public:
  bool run(llvm::Function& function) {
    llvm::SmallVector<llvm::ExtractElementInst*> extracts;
    for (llvm::BasicBlock& block : function)
      for (llvm::Instruction& inst : block)
        if (auto* extract = llvm::dyn_cast<llvm::ExtractElementInst>(&inst))
          if (sub_byte_vector(extract->getVectorOperandType())) extracts.push_back(extract);
    bool changed = false;
    for (llvm::ExtractElementInst* extract : extracts) changed |= rewrite(*extract);
    for (llvm::LoadInst* load : loads_)
      if (load->use_empty()) load->eraseFromParent();
    return changed;
  }

 private:
  // The integer view of `vector`, made once per vector.
  llvm::Value* view(llvm::Value* vector) {
    if (auto it = views_.find(vector); it != views_.end()) return it->second;
    auto* type = llvm::cast<llvm::FixedVectorType>(vector->getType());
    llvm::Type* as = view_type(type);
    if (as == nullptr) return nullptr;
    llvm::Value* made = nullptr;
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(vector); load != nullptr && !load->isAtomic()) {
      llvm::IRBuilder<> builder(load);
      llvm::LoadInst* whole = builder.CreateAlignedLoad(as, load->getPointerOperand(), load->getAlign(),
                                                        load->isVolatile(), load->getName() + ".bits");
      whole->copyMetadata(*load);
      // The vector's other users (a store of it, a shuffle) read the same bits.
      if (!load->hasOneUse() || !llvm::isa<llvm::ExtractElementInst>(*load->user_begin())) {
        llvm::Value* again = builder.CreateBitCast(whole, type);
        load->replaceUsesWithIf(again,
                                [](llvm::Use& use) { return !llvm::isa<llvm::ExtractElementInst>(use.getUser()); });
      }
      loads_.push_back(load);
      made = whole;
    } else if (auto* cast = llvm::dyn_cast<llvm::BitCastInst>(vector);
               cast != nullptr && !cast->getSrcTy()->isVectorTy()) {
      llvm::IRBuilder<> builder(cast);
      made = builder.CreateBitCast(cast->getOperand(0), as);
    } else if (auto* inst = llvm::dyn_cast<llvm::Instruction>(vector)) {
      llvm::IRBuilder<> builder(inst->getParent(), std::next(inst->getIterator()));
      if (llvm::isa<llvm::PHINode>(inst)) builder.SetInsertPoint(inst->getParent()->getFirstNonPHIIt());
      made = builder.CreateBitCast(inst, as);
    } else {
      return nullptr;  // an argument or a constant: left to the back end
    }
    views_[vector] = made;
    return made;
  }

  bool rewrite(llvm::ExtractElementInst& extract) {
    auto* type = llvm::cast<llvm::FixedVectorType>(extract.getVectorOperandType());
    unsigned element = type->getElementType()->getIntegerBitWidth();
    auto* index = llvm::dyn_cast<llvm::ConstantInt>(extract.getIndexOperand());
    llvm::Type* as = view_type(type);
    // A runtime index needs the whole vector in one integer; a constant one past the end is poison, which the
    // back end folds.
    if (as == nullptr || (index == nullptr && !as->isIntegerTy())) return false;
    if (index != nullptr && index->getZExtValue() >= type->getNumElements()) return false;
    llvm::Value* bits = view(extract.getVectorOperand());
    if (bits == nullptr) return false;
    llvm::IRBuilder<> builder(&extract);
    llvm::Value* word = bits;
    llvm::Value* shift = nullptr;
    if (index != nullptr) {
      uint64_t first = index->getZExtValue() * element;
      if (!as->isIntegerTy()) {
        word = builder.CreateExtractElement(bits, builder.getInt32(static_cast<uint32_t>(first / 32)));
        first %= 32;
      }
      shift = llvm::ConstantInt::get(word->getType(), first);
    } else {
      llvm::Value* at = builder.CreateZExtOrTrunc(extract.getIndexOperand(), as);
      shift = builder.CreateMul(at, llvm::ConstantInt::get(as, element));
    }
    llvm::Value* field = builder.CreateTrunc(builder.CreateLShr(word, shift), type->getElementType(),
                                             extract.getName());
    extract.replaceAllUsesWith(field);
    extract.eraseFromParent();
    return true;
  }

  llvm::DenseMap<llvm::Value*, llvm::Value*> views_;
  llvm::SmallVector<llvm::LoadInst*> loads_;
};

}  // namespace

void read_sub_byte_elements_as_bits(llvm::Module& module) {
  for (llvm::Function& function : module)
    if (!function.isDeclaration()) Rewriter().run(function);
}

}  // namespace ww::compiler::detail
