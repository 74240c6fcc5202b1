// Extern functions defined by LLVM bitcode (or assembly) files that the module's `ww.externs` attribute names:
// linked before optimisation, only what is used, inlined; what cannot be linked is a CompileError naming the file
// or the symbol at the kernel's call, never an abort.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ww/compiler/compiler.hpp"

namespace wc = ww::compiler;

namespace {

constexpr const char* kLibrary = R"(
target triple = "nvptx64-nvidia-cuda"
define i32 @twice_plus(i32 %a) {
  %d = shl i32 %a, 1
  %r = add i32 %d, 424242
  ret i32 %r
}
define i32 @gone(i32 %a) {
  %r = mul i32 %a, 98765
  ret i32 %r
}
)";

std::string write_temp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/ww_extern_test_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string kernel(const std::string& externs_attribute, const std::string& type = "i32") {
  return "module attributes {ww.externs = " + externs_attribute + "} {\n"
         "  llvm.func @twice_plus(" + type + ") -> " + type + "\n"
         "  llvm.func @k(%p: !llvm.ptr<1>, %a: " + type + ") attributes {nvvm.kernel} {\n"
         "    %r = llvm.call @twice_plus(%a) {always_inline} : (" + type + ") -> " + type + " loc(\"user.py\":7:3)\n"
         "    llvm.store %r, %p : " + type + ", !llvm.ptr<1>\n"
         "    llvm.return\n"
         "  }\n"
         "}\n";
}

wc::CompileError compile_error(const std::string& mlir) {
  try {
    wc::mlir_to_ptx(mlir, wc::default_target("sm_80"));
  } catch (const wc::CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a CompileError";
  return wc::CompileError(wc::Stage::target, {});
}

}  // namespace

TEST(ExternBitcode, LinkedInlinedAndOnlyWhatIsUsed) {
  std::string lib = write_temp("lib.ll", kLibrary);
  std::string ptx = wc::mlir_to_ptx(kernel("[{symbol = \"twice_plus\", bitcode = \"" + lib + "\"}]"),
                                    wc::default_target("sm_80"));
  EXPECT_EQ(ptx.find("call"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("gone"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("98765"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("424242"), std::string::npos) << ptx;
}

TEST(ExternBitcode, UndefinedSymbolIsNamedAtTheCall) {
  wc::CompileError e = compile_error(kernel("[{symbol = \"twice_plus\"}]"));
  EXPECT_EQ(e.stage(), wc::Stage::llvm);
  ASSERT_FALSE(e.diagnostics().empty());
  const wc::Diagnostic& d = e.diagnostics().front();
  EXPECT_NE(d.message.find("'twice_plus' is not defined"), std::string::npos) << d.message;
  EXPECT_EQ(d.file, "user.py");
  EXPECT_EQ(d.line, 7);
}

TEST(ExternBitcode, UnreadableOrForeignFilesAreNamed) {
  std::string missing = "/nonexistent/dir/lib.bc";
  wc::CompileError e = compile_error(kernel("[{symbol = \"twice_plus\", bitcode = \"" + missing + "\"}]"));
  EXPECT_NE(e.diagnostics().front().message.find(missing), std::string::npos) << e.what();

  std::string junk = write_temp("junk.bc", "BC\xc0\xde not bitcode");
  e = compile_error(kernel("[{symbol = \"twice_plus\", bitcode = \"" + junk + "\"}]"));
  EXPECT_NE(e.diagnostics().front().message.find(junk), std::string::npos) << e.what();

  std::string host = write_temp("host.ll", "target triple = \"x86_64-unknown-linux-gnu\"\n"
                                           "define i32 @twice_plus(i32 %a) { ret i32 %a }\n");
  e = compile_error(kernel("[{symbol = \"twice_plus\", bitcode = \"" + host + "\"}]"));
  EXPECT_NE(e.diagnostics().front().message.find("not for the GPU"), std::string::npos) << e.what();
}

TEST(ExternBitcode, DefinitionOfAnotherTypeIsRefused) {
  std::string lib = write_temp("lib2.ll", kLibrary);
  wc::CompileError e = compile_error(kernel("[{symbol = \"twice_plus\", bitcode = \"" + lib + "\"}]", "i64"));
  EXPECT_NE(e.diagnostics().front().message.find("declared as 'i64 (i64)'"), std::string::npos) << e.what();
}

TEST(ExternBitcode, MalformedAttributeIsAParseError) {
  wc::CompileError e = compile_error(kernel("[\"twice_plus\"]"));
  EXPECT_EQ(e.stage(), wc::Stage::parse);
}
