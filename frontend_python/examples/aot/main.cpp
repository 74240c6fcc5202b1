// Calls two kernels exported by export_kernels.py from C++, with nothing but the CUDA driver (-lcuda): an fp16
// elementwise add on a stream and the Ampere tensor-core GEMM, each checked against a reference on the CPU.
//
//   aot_example [M N]          sizes of the add (N a multiple of 8); the GEMM is 256 x 384 x 128, batch 2
//   aot_example --dry-run      launch without checking results (for a stand-in driver that runs nothing)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "aot_add.h"
#include "aot_gemm.h"

// The driver entry points this program calls, as cuda.h declares them (so that it builds without CUDA headers).
extern "C" {
typedef unsigned long long CUdeviceptr;
int cuInit(unsigned flags);
int cuDeviceGet(int *device, int ordinal);
int cuDevicePrimaryCtxRetain(CUcontext *ctx, int device);
int cuCtxSetCurrent(CUcontext ctx);
int cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
int cuMemFree_v2(CUdeviceptr p);
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
int cuStreamCreate(CUstream *stream, unsigned flags);
int cuStreamSynchronize(CUstream stream);
int cuStreamDestroy_v2(CUstream stream);
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    int r_ = (call);                                                                     \
    if (r_ != 0) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, r_);   \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// IEEE half <-> float, rounding to nearest even (the kernels read and write fp16).
static uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  const int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {  // a subnormal half, or zero
    if (exp < -10) return uint16_t(sign);
    const uint32_t m = mant | 0x800000u, shift = uint32_t(14 - exp);
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(h);
}

static float from_half(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(float(mant), -24);
  if (exp == 31) return mant ? NAN : (sign ? -INFINITY : INFINITY);
  const uint32_t x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

static std::vector<uint16_t> random_halves(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (auto &x : v) x = to_half(u(rng));
  return v;
}

static CUdeviceptr upload(const std::vector<uint16_t> &v) {
  CUdeviceptr p;
  CHECK(cuMemAlloc_v2(&p, v.size() * 2));
  CHECK(cuMemcpyHtoD_v2(p, v.data(), v.size() * 2));
  return p;
}

// Whether |got - ref| <= atol + rtol * |ref| everywhere; prints the largest error.
static bool close(const char *what, const std::vector<uint16_t> &got, const std::vector<double> &ref, double atol,
                  double rtol) {
  double worst = 0;
  bool ok = true;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(double(from_half(got[i])) - ref[i]);
    worst = std::fmax(worst, e);
    if (!(e <= atol + rtol * std::fabs(ref[i]))) ok = false;
  }
  std::printf("%s: max error %.3g over %zu elements: %s\n", what, worst, ref.size(), ok ? "ok" : "WRONG");
  return ok;
}

static bool run_add(int32_t M, int32_t N, bool check, std::mt19937 &rng) {
  const size_t n = size_t(M) * N;
  auto a = random_halves(n, rng), b = random_halves(n, rng);
  std::vector<uint16_t> c(n, 0x7e00);  // NaN: every element must be written
  CUdeviceptr da = upload(a), db = upload(b), dc = upload(c);
  CUstream stream;
  CHECK(cuStreamCreate(&stream, 0));
  aot_add_Kernel_Module_t module;
  CHECK(aot_add_Kernel_Module_Load(&module));
  // Row-major (M, N): the dynamic extents (M, N) and the row stride N, as aot_add.h lists them.
  aot_add_Tensor_mA_t ta = {(void *)da, {M, N}, {N}};
  aot_add_Tensor_mB_t tb = {(void *)db, {M, N}, {N}};
  aot_add_Tensor_mC_t tc = {(void *)dc, {M, N}, {N}};
  if (cute_dsl_aot_add_wrapper(&module, &ta, &tb, &tc, stream) != 0) {
    std::fprintf(stderr, "%s\n", aot_add_Last_Error());
    return false;
  }
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(c.data(), dc, n * 2));
  CHECK(aot_add_Kernel_Module_Unload(&module));
  CHECK(cuStreamDestroy_v2(stream));
  for (CUdeviceptr p : {da, db, dc}) CHECK(cuMemFree_v2(p));
  if (!check) return true;
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = double(from_half(a[i])) + double(from_half(b[i]));
  return close("elementwise add", c, ref, 1e-3, 1e-3);
}

static bool run_gemm(int32_t M, int32_t N, int32_t K, int32_t L, bool check, std::mt19937 &rng) {
  auto a = random_halves(size_t(M) * K * L, rng), b = random_halves(size_t(N) * K * L, rng);
  std::vector<uint16_t> c(size_t(M) * N * L, 0x7e00);
  CUdeviceptr da = upload(a), db = upload(b), dc = upload(c);
  aot_gemm_Kernel_Module_t module;
  CHECK(aot_gemm_Kernel_Module_Load(&module));
  // A (M, K, L) and B (N, K, L) K-major, C (M, N, L) N-major: extents of modes 0, 1, 2, strides of modes 0 and 2.
  aot_gemm_Tensor_mA_t ta = {(void *)da, {M, K, L}, {K, M * K}};
  aot_gemm_Tensor_mB_t tb = {(void *)db, {N, K, L}, {K, N * K}};
  aot_gemm_Tensor_mC_t tc = {(void *)dc, {M, N, L}, {N, M * N}};
  if (cute_dsl_aot_gemm_wrapper(&module, &ta, &tb, &tc) != 0) {
    std::fprintf(stderr, "%s\n", aot_gemm_Last_Error());
    return false;
  }
  CHECK(cuStreamSynchronize(nullptr));
  CHECK(cuMemcpyDtoH_v2(c.data(), dc, c.size() * 2));
  CHECK(aot_gemm_Kernel_Module_Unload(&module));
  for (CUdeviceptr p : {da, db, dc}) CHECK(cuMemFree_v2(p));
  if (!check) return true;
  std::vector<double> ref(c.size());
  for (int32_t l = 0; l < L; ++l)
    for (int32_t m = 0; m < M; ++m)
      for (int32_t n = 0; n < N; ++n) {
        double s = 0;
        for (int32_t k = 0; k < K; ++k)
          s += double(from_half(a[(size_t(l) * M + m) * K + k])) * double(from_half(b[(size_t(l) * N + n) * K + k]));
        ref[(size_t(l) * M + m) * N + n] = s;
      }
  return close("tensorop GEMM", c, ref, 1e-2, 1e-2);  // fp32 accumulation, one fp16 rounding of the result
}

int main(int argc, char **argv) {
  bool check = true;
  std::vector<int32_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dry-run") == 0) check = false;
    else sizes.push_back(int32_t(std::atoi(argv[i])));
  }
  const int32_t M = sizes.size() > 0 ? sizes[0] : 777, N = sizes.size() > 1 ? sizes[1] : 1024;
  CUcontext ctx;
  int dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  std::mt19937 rng(2026);
  const bool ok = run_add(M, N, check, rng) && run_gemm(256, 384, 128, 2, check, rng);
  return ok ? 0 : 1;
}
