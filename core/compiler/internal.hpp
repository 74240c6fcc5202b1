// Private interfaces between the compiler's translation units. Only forward declarations of LLVM types here, so
// that including this header costs nothing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ww/compiler/compiler.hpp"

namespace llvm {
class BasicBlock;
class Function;
class Instruction;
class LLVMContext;
class Module;
class PassBuilder;
class TargetMachine;
}  // namespace llvm

namespace ww::compiler::detail {

// Stages that run on LLVM/MLIR frames (built without exceptions) report failure through this instead of throwing;
// the driver throws once those frames are gone.
struct Failure {
  Stage stage = Stage::parse;
  std::vector<Diagnostic> diagnostics;
};

inline Diagnostic error_diag(std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  return d;
}

class Stopwatch {
 public:
  double lap_ms() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// A function the module calls and declares without defining it (the frontend's cute.extern): the module attribute
// `ww.externs` lists them, each with the LLVM bitcode file that defines it, if one was given.
struct ExternFunction {
  std::string symbol;
  std::string bitcode;  // path of the file defining it; empty when none was given
  std::string file;     // where the kernel first calls it (the user's line), for the diagnostics; empty if unknown
  int line = 0;
  int col = 0;
};

// --- fatal_error.cpp ---------------------------------------------------------------------------------------------
// Runs `fn`, which must not throw. If LLVM reports a fatal error inside it, control comes back here (by longjmp:
// whatever `fn` had allocated is leaked, its objects must not be used again), `*reason` gets LLVM's message and the
// result is false. Outside such a call, a fatal error is printed with a warpweave prefix before LLVM exits.
bool run_guarded(const std::function<void()>& fn, std::string* reason);

// --- mlir_pipeline.cpp (the only translation unit with MLIR headers) ---------------------------------------------
// Parse, verify, lower to the LLVM dialect and translate into `llvm_ctx`. On failure returns null and fills
// `failure`. `stage` is kept current so that a fatal error can be attributed.
// The module's `ww.externs` attribute is taken off before lowering and returned in `externs`.
std::unique_ptr<llvm::Module> lower_to_llvm_ir(std::string_view mlir_text, const CompileOptions& options,
                                               llvm::LLVMContext& llvm_ctx, CompileResult& result,
                                               std::vector<ExternFunction>& externs, Failure& failure,
                                               Stage& stage);
// After a fatal error the MLIR context may be inconsistent: drop it (leaked, never destroyed) and make a new one.
void abandon_mlir_context();

// --- nvptx_codegen.cpp (LLVM only) -------------------------------------------------------------------------------
// The whole MLIR -> PTX path: checks the target, lowers (above) into a fresh LLVMContext whose diagnostics are
// collected, sets triple and data layout, optimises and emits PTX. False + `failure` on error.
bool generate_ptx(std::string_view mlir_text, const Target& target, const CompileOptions& options,
                  CompileResult& result, std::string& ptx, Failure& failure, Stage& stage);
// After a fatal error inside LLVM the cached TargetMachines' state is unknown: drop (leak) them.
void abandon_target_machines();

// --- extern_bitcode.cpp (LLVM only) ------------------------------------------------------------------------------
// Links the bitcode files that define `externs` into `module` before it is optimised: only what the module uses,
// made internal to it (unused library functions disappear, the used ones may be inlined). Afterwards every extern
// must be defined, with the type the module declared. False + `failure` (naming the file or the symbol, at the
// kernel's first call of it) otherwise.
bool link_extern_bitcode(llvm::Module& module, const std::vector<ExternFunction>& externs, Failure& failure);

// --- convergence.cpp (LLVM only) ---------------------------------------------------------------------------------
// Marks every defined function, every inline-asm call and every call to a non-intrinsic convergent (see the file).
void mark_calls_convergent(llvm::Module& module);

// --- loop_iteration_fences.cpp (LLVM only) -----------------------------------------------------------------------
// Keeps InstCombine from moving a loop's shared-memory loads into the next iteration (see the file): fences put in
// at the pipeline's start, taken out after its last optimisation.
void add_loop_iteration_fences(llvm::PassBuilder& builder);

// --- sub_byte_vectors.cpp (LLVM only) ----------------------------------------------------------------------------
// Elements of vectors of 2- to 7-bit integers read as bit fields of an integer view, after the last optimisation
// (see the file): NVPTX would extract them through a stack slot it leaves in the frame.
void read_sub_byte_elements_as_bits(llvm::Module& module);

// --- launch_constants.cpp (LLVM only) ----------------------------------------------------------------------------
// Reads of the grid's, block's and cluster's extents and indices made again in each block that uses them (out of
// loops), after the last optimisation pass: one merged read at the entry lives across every warp role and may spill.
void rematerialize_launch_constants(llvm::Module& module);

// --- warp_role_values.cpp (LLVM only) ----------------------------------------------------------------------------
// Values made only of kernel arguments, constants and special registers, used inside warp roles (regions reached by
// a branch on the warp's index), computed again at the top of each role that uses them, after the last optimisation
// pass: hoisted above the roles, they live across all of them and may spill.
void recompute_values_in_warp_roles(llvm::Module& module);

// The blocks where a warp role starts: a successor, reached from that block alone, of a branch on the warp's index.
std::vector<const llvm::BasicBlock*> warp_role_entries(llvm::Function& function);

// --- merged_warp_broadcasts.cpp (LLVM only) ---------------------------------------------------------------------
// Equal full-warp broadcasts from a fixed lane within one block merged into the first, after the last optimisation
// pass: kept apart (they are convergent), addresses made from them stay apart and may spill.
void merge_warp_broadcasts(llvm::Module& module);

// --- values_past_other_roles.cpp (LLVM only) --------------------------------------------------------------------
// A value merged where a warp role ends, read inside another role that no warp of the first reaches, replaced there
// by the value the warps skipping the first role bring: merged, it lives across the first role and may spill there.
void forward_values_past_other_roles(llvm::Module& module);

// --- sunk_vector_extracts.cpp (LLVM only) ------------------------------------------------------------------------
// Each element taken out of a vector moved to right before its first use in its block, after the last optimisation
// pass: extracted together after a load, a fragment's elements all lived at once.
void sink_vector_extracts(llvm::Module& module);

// --- role_values_kept.cpp (LLVM only) ----------------------------------------------------------------------------
// The copies of the passes above kept where they are through code generation, whose common-subexpression
// elimination merged sibling roles' equal copies into one above the roles: the launch constants read by inline
// assembly, and each warp role's pure arithmetic reading the integer kernel arguments through a move of its own.
// Runs last, after every pass that places copies.
void keep_role_values_in_place(llvm::Module& module);

// --- asm_address_offsets.cpp (LLVM only) ------------------------------------------------------------------------
// A constant offset of an inline-assembly operand used only as a memory address (`[$n]`, a generic, global or shared
// pointer's integer) written into the template (`[$n+C]`), after the last optimisation pass: each base-plus-constant
// address was a register of its own.
void fold_offsets_into_asm_addresses(llvm::Module& module);

// --- cheap_pure_instructions.cpp (LLVM only) --------------------------------------------------------------------
// Free of memory, side effects and cross-thread communication (no phi, terminator or alloca; a call only to a
// non-convergent intrinsic), and cheap (no integer division by a variable): an instruction the passes below may
// compute again in another place, or earlier in its block.
bool cheap_and_pure(const llvm::Instruction& inst);

// --- loop_invariant_values.cpp (LLVM only) ----------------------------------------------------------------------
// Values made only of kernel arguments, constants and special registers, hoisted out of an outer loop (a persistent
// kernel's tile loop) and used in it, computed again inside that loop where that takes them off an inner loop's live
// range (an epilogue's addresses, after the main loop; never inside an innermost loop), after the last optimisation
// pass: hoisted, they live across the whole loop and its main loop, and may spill.
void recompute_invariant_values_in_loops(llvm::Module& module);

// --- narrow_float_conversions.cpp (LLVM only) --------------------------------------------------------------------
// Integers of at most 24 significant bits converted to bf16 or f16 through a 32-bit integer and f32 (exact there, so
// rounded once), after the last optimisation pass: full-rate conversions, rounded in pairs, as NVIDIA's compiler does.
void convert_small_integers_through_f32(llvm::Module& module);

// --- paired_float_arithmetic.cpp (LLVM only) ---------------------------------------------------------------------
// Independent f32 multiplies, adds and fused multiply-adds of a block executed in pairs, on vectors of two lanes,
// where the target's code generator has those as legal operations (each lane rounds as before), after the last
// optimisation pass.
void pair_float_arithmetic(llvm::Module& module, const llvm::TargetMachine& machine);

// --- shared_constant_addresses.cpp (LLVM only) -------------------------------------------------------------------
// Loads, stores and atomics at a constant shared-memory address (a shared array's symbol plus an offset) take the
// array's address from a register and the offset in the instruction, as the other shared-memory accesses do, after
// the last optimisation pass: the symbol written into an address changed what the assembler kept uniform.
void address_shared_constants_from_registers(llvm::Module& module);

// --- nvptxcompiler.cpp / nvjitlink.cpp / ptxas.cpp -----------------------------------------------------------------
// What to ask of a cubin tool; each tool spells it its own way.
struct CubinRequest {
  std::string arch;  // "sm_90a"
  int opt_level = 3;
  bool verbose = false;    // resource usage report per kernel
  bool line_info = false;
  std::vector<std::string> ptxas_options;  // raw ptxas options
};
struct CubinOutput {
  bool ok = false;
  std::vector<uint8_t> cubin;
  std::string log;  // the tool's info log on success; its error (and info) log on failure
};
// False when libww_nvptxcompiler cannot be loaded; `why` then says where it looked.
bool nvptxcompiler_available(std::string* why = nullptr);
CubinOutput nvptxcompiler_compile(std::string_view ptx, const CubinRequest& request);
// False when libnvJitLink cannot be loaded; `why` then says where it looked.
bool nvjitlink_available(std::string* why = nullptr);
CubinOutput nvjitlink_compile(std::string_view ptx, const CubinRequest& request);
// Empty when no ptxas is found; `why` then says where it looked.
std::string find_ptxas(std::string* why = nullptr);
CubinOutput ptxas_compile(const std::string& ptxas, std::string_view ptx, const CubinRequest& request);

// --- tools.cpp ---------------------------------------------------------------------------------------------------
// Directories from set_search_dirs(), expanded with the sub-directories a pip wheel or a toolkit uses.
std::vector<std::string> expand_search_dirs(const std::vector<std::string>& dirs);
std::vector<std::string> configured_search_dirs();
std::vector<std::string> split_path_list(std::string_view list);
std::string getenv_str(const char* name);
bool is_executable_file(const std::string& path);
bool is_regular_file(const std::string& path);
// dlopen()s the first of `candidates` (a path, or a bare name for the loader's own search) that loads and that
// `bind` accepts; nullptr if none does, with one line per candidate in `tried` saying why.
void* open_library(const std::vector<std::string>& candidates, const std::function<bool(void*)>& bind,
                   std::string* path, std::string* tried);
// The directory of the shared object (or executable) that holds the compiler: where the build places the
// libraries that travel with it.
std::string own_directory();
// First executable named one of `names` in `dirs`, then $PATH, then $CUDA_HOME/bin and /usr/local/cuda/bin.
std::string find_tool(const std::vector<std::string>& names, const std::vector<std::string>& dirs);

// Runs argv[0] (a path) with its output (stdout and stderr together) captured. Returns the exit status, or -1
// with `output` explaining why it could not run.
int run_process(const std::vector<std::string>& argv, std::string& output);

// A private directory under $TMPDIR, removed with its files on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, std::string_view data) const;  // returns the file's path
  bool ok() const { return !path_.empty(); }

 private:
  std::string path_;
};
bool read_file(const std::string& path, std::string& out);

}  // namespace ww::compiler::detail
