// ww-compile: the compiler driver from the command line, for looking at what a kernel becomes and timing it.
//   ww_compile kernel.mlir [--target sm_90a] [--emit ptx|cubin|sass|llvm|mlir] [-o FILE] [-O N] [-v]
//              [--line-info] [--cubin-tool nvjitlink|ptxas] [--repeat N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ww/compiler/compiler.hpp"

namespace wc = ww::compiler;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: ww_compile FILE.mlir [--target sm_90a] [--emit ptx|cubin|sass|llvm|mlir] [-o FILE] [-O N]\n"
               "                  [-v] [--line-info] [--cubin-tool nvjitlink|ptxas] [--repeat N]\n");
  return 2;
}

void print_timings(const wc::CompileResult& r, const char* label, double wall_ms) {
  const auto& t = r.timings;
  std::fprintf(stderr,
               "%s: parse %.2f  lower %.2f  llvm-opt %.2f  codegen %.2f  cubin %.2f (%s)  wall %.2f ms\n", label,
               t.parse_ms, t.lower_ms, t.llvm_opt_ms, t.codegen_ms, t.cubin_ms, r.cubin_tool.c_str(), wall_ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, output, emit = "ptx", target_name = "sm_90a";
  wc::CompileOptions options;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--target") target_name = value();
    else if (arg == "--emit") emit = value();
    else if (arg == "-o") output = value();
    else if (arg == "-O") options.opt_level = std::atoi(value().c_str());
    else if (arg == "-v") options.verbose_ptxas = true;
    else if (arg == "--line-info") options.line_info = true;
    else if (arg == "--cubin-tool") options.cubin_tool = value();
    else if (arg == "--repeat") repeat = std::max(1, std::atoi(value().c_str()));
    else if (!arg.empty() && arg[0] != '-' && input.empty()) input = arg;
    else return usage();
  }
  if (input.empty()) return usage();
  std::ifstream in(input);
  if (!in) {
    std::fprintf(stderr, "ww_compile: cannot read %s\n", input.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  options.source_name = input;
  options.want_llvm_ir = emit == "llvm";
  options.want_optimized_mlir = emit == "mlir";

  try {
    wc::Target target = wc::default_target(target_name);
    wc::CompileResult result;
    for (int i = 0; i < repeat; ++i) {
      auto start = std::chrono::steady_clock::now();
      result = wc::compile(text.str(), target, options);
      double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (repeat > 1) print_timings(result, i == 0 ? "cold" : "warm", wall);
    }
    if (!result.jit_log.empty()) std::fprintf(stderr, "%s\n", result.jit_log.c_str());
    for (const auto& warning : result.warnings) std::fprintf(stderr, "%s\n", warning.str().c_str());

    std::string bytes;
    if (emit == "ptx") bytes = result.ptx;
    else if (emit == "llvm") bytes = result.llvm_ir;
    else if (emit == "mlir") bytes = result.mlir;
    else if (emit == "cubin") bytes.assign(result.cubin.begin(), result.cubin.end());
    else if (emit == "sass") bytes = wc::disassemble_sass(result.cubin);
    else return usage();
    if (output.empty()) {
      std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    } else {
      std::ofstream(output, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  } catch (const wc::CompileError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ww_compile: %s\n", e.what());
    return 1;
  }
  return 0;
}
