// Hot paths of the layout algebra: tracing a kernel calls these thousands of times.
#include <benchmark/benchmark.h>

#include "ww/layout/notation.hpp"

namespace {
using namespace ww;

void BM_CompositionTile(benchmark::State& st) {
  // A 128x64 row-major smem tile composed with a thread-value layout of 128 threads x 8 values.
  Layout a = parse_layout("(128,64):(64,1)");
  Layout tv = parse_layout("((8,16),(8,1)):((1024,8),(1,0))");
  for (auto _ : st) benchmark::DoNotOptimize(composition(a, tv));
}
BENCHMARK(BM_CompositionTile);

void BM_CompositionDocExample(benchmark::State& st) {
  Layout a = parse_layout("(6,2):(8,2)");
  Layout b = parse_layout("(4,3):(3,1)");
  for (auto _ : st) benchmark::DoNotOptimize(composition(a, b));
}
BENCHMARK(BM_CompositionDocExample);

void BM_LogicalDivideGemmTile(benchmark::State& st) {
  // An 8192x8192 matrix divided into 128x128 CTA tiles.
  Layout m = parse_layout("(8192,8192):(8192,1)");
  Tiler t = Tiler::from_shape(parse_int_tuple("(128,128)"));
  for (auto _ : st) benchmark::DoNotOptimize(logical_divide(m, t));
}
BENCHMARK(BM_LogicalDivideGemmTile);

void BM_ZippedDivideDynamic(benchmark::State& st) {
  // The same with runtime extents and strides (symbolic).
  Int m = Int::symbol(1), n = Int::symbol(2, 8);
  Layout row = make_layout(tup({IntTuple(m), IntTuple(n)}), tup({IntTuple(n), IntTuple(1)}));
  Tiler t = Tiler::from_shape(parse_int_tuple("(128,128)"));
  for (auto _ : st) benchmark::DoNotOptimize(zipped_divide(row, t));
}
BENCHMARK(BM_ZippedDivideDynamic);

void BM_MakeLayoutTV(benchmark::State& st) {
  Layout thr = parse_layout("(4,32):(32,1)"), val = parse_layout("(4,8):(8,1)");
  for (auto _ : st) benchmark::DoNotOptimize(make_layout_tv(thr, val));
}
BENCHMARK(BM_MakeLayoutTV);

void BM_Print(benchmark::State& st) {
  Layout a = parse_layout("((8,16),(8,4)):((1024,8),(1,128))");
  for (auto _ : st) benchmark::DoNotOptimize(a.str());
}
BENCHMARK(BM_Print);

void BM_Parse(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(parse_layout("((8,16),(8,4)):((1024,8),(1,128))"));
}
BENCHMARK(BM_Parse);

void BM_EvaluateCoordinate(benchmark::State& st) {
  Layout a = parse_layout("((8,16),(8,4)):((1024,8),(1,128))");
  int64_t i = 0;
  for (auto _ : st) benchmark::DoNotOptimize(a(IntTuple(i++ & 4095)));
}
BENCHMARK(BM_EvaluateCoordinate);

}  // namespace
