// ww_runtime: the driver loader, errors without a driver, and (on a GPU machine) devices, modules,
// launches, memory, streams, events and tensor maps.
//
// Tests named NoDriver* run everywhere. Tests in the Gpu suite skip with "no CUDA driver/GPU: <reason>"
// unless a device is present.
#include "ww/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "driver_api.hpp"  // private: the raw cuLaunchKernel baseline of the launch-overhead test

namespace rt = ww::runtime;

namespace {

// Hand-written PTX (ptxas 13.0 accepts it for sm_80, sm_90a and sm_100a):
// ww_add_f32(out, a, b, n): out[i] = a[i] + b[i] for i < n, one element per thread, 1-D grid.
// ww_empty(): nothing, for launch overhead.
constexpr const char* kPtx = R"(
.version 8.0
.target sm_80
.address_size 64

.visible .entry ww_add_f32(
    .param .u64 ww_add_f32_out,
    .param .u64 ww_add_f32_a,
    .param .u64 ww_add_f32_b,
    .param .u32 ww_add_f32_n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<6>;
    .reg .f32   %f<4>;
    .reg .b64   %rd<11>;

    ld.param.u64        %rd1, [ww_add_f32_out];
    ld.param.u64        %rd2, [ww_add_f32_a];
    ld.param.u64        %rd3, [ww_add_f32_b];
    ld.param.u32        %r1, [ww_add_f32_n];
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %tid.x;
    mad.lo.u32          %r5, %r2, %r3, %r4;
    setp.ge.u32         %p1, %r5, %r1;
    @%p1 bra            $L_done;
    cvta.to.global.u64  %rd4, %rd1;
    cvta.to.global.u64  %rd5, %rd2;
    cvta.to.global.u64  %rd6, %rd3;
    mul.wide.u32        %rd7, %r5, 4;
    add.s64             %rd8, %rd5, %rd7;
    add.s64             %rd9, %rd6, %rd7;
    add.s64             %rd10, %rd4, %rd7;
    ld.global.f32       %f1, [%rd8];
    ld.global.f32       %f2, [%rd9];
    add.rn.f32          %f3, %f1, %f2;
    st.global.f32       [%rd10], %f3;
$L_done:
    ret;
}

.visible .entry ww_empty()
{
    ret;
}
)";

constexpr const char* kMissingDriverPrefix = "CUDA driver libcuda.so.1 not";

// ---------------------------------------------------------------------------------------------------
// Without a driver: every entry point raises CudaError with the loader's message.

struct EntryPoint {
  const char* name;
  std::function<void()> call;
};

std::vector<EntryPoint> entry_points() {
  static float host[16];
  static const std::uint64_t dims[2] = {64, 64};
  static const std::uint64_t strides[1] = {256};
  static const std::uint32_t box[2] = {16, 16};
  static const std::uint64_t dims4[4] = {64, 16, 16, 2};
  static const std::uint64_t strides4[3] = {128, 2048, 32768};
  static const int corner[2] = {-1, -1};
  const rt::DevicePtr fake = 0x100000;  // never reaches a driver: every call must fail first
  return {
      {"driver_version", [] { rt::driver_version(); }},
      {"device_count", [] { rt::device_count(); }},
      {"device_info", [] { rt::device_info(0); }},
      {"set_device", [] { rt::set_device(0); }},
      {"current_device", [] { rt::current_device(); }},
      {"synchronize", [] { rt::synchronize(); }},
      {"Module::load", [] { rt::Module::load(kPtx); }},
      {"Module{}.function", [] { rt::Module{}.function("ww_add_f32"); }},
      {"Function{}.num_regs", [] { rt::Function{}.num_regs(); }},
      {"Function{}.set_max_dynamic_shared_memory", [] { rt::Function{}.set_max_dynamic_shared_memory(65536); }},
      {"DeviceBuffer", [] { rt::DeviceBuffer b(1024); }},
      {"memcpy_htod", [fake] { rt::memcpy_htod(fake, host, sizeof(host)); }},
      {"memcpy_dtoh", [fake] { rt::memcpy_dtoh(host, fake, sizeof(host)); }},
      {"memcpy_dtod", [fake] { rt::memcpy_dtod(fake, fake + 64, 64); }},
      {"memcpy_htod_async", [fake] { rt::memcpy_htod_async(fake, host, sizeof(host), 0); }},
      {"memcpy_dtoh_async", [fake] { rt::memcpy_dtoh_async(host, fake, sizeof(host), 0); }},
      {"memcpy_dtod_async", [fake] { rt::memcpy_dtod_async(fake, fake + 64, 64, nullptr); }},
      {"memset_d8", [fake] { rt::memset_d8(fake, 1, 16); }},
      {"memset_d32", [fake] { rt::memset_d32(fake, 1, 16); }},
      {"memset_d8_async", [fake] { rt::memset_d8_async(fake, 1, 16, 0); }},
      {"memset_d32_async", [fake] { rt::memset_d32_async(fake, 1, 16, 0); }},
      {"pointer_device", [fake] { rt::pointer_device(fake); }},
      {"Stream::create", [] { rt::Stream::create(); }},
      {"synchronize(stream)", [] { rt::synchronize(rt::StreamRef{}); }},
      {"Stream{}.synchronize", [] { rt::Stream{}.synchronize(); }},
      {"Stream{}.query", [] { rt::Stream{}.query(); }},
      {"Event::create", [] { rt::Event::create(); }},
      {"Event{}.record", [] { rt::Event{}.record(); }},
      {"Event{}.synchronize", [] { rt::Event{}.synchronize(); }},
      {"Event{}.query", [] { rt::Event{}.query(); }},
      {"elapsed_ms", [] { rt::elapsed_ms(rt::Event{}, rt::Event{}); }},
      {"launch", [] { rt::launch(rt::Function{}, rt::LaunchConfig{}, nullptr); }},
      {"launch(dims)",
       [] {
         rt::launch(rt::Function{}, 1, 32, {2, 1, 1}, 0, 0, nullptr, true);
       }},
      {"PreparedLaunch", [] { rt::PreparedLaunch p(rt::Function{}, rt::LaunchConfig{}); }},
      {"encode_tiled", [fake] { rt::encode_tiled(rt::tensor_map::kFloat32, fake, dims, strides, box, {}); }},
      {"encode_im2col",
       [fake] { rt::encode_im2col(rt::tensor_map::kFloat16, fake, dims4, strides4, corner, corner, 64, 64, {}); }},
  };
}

// Returns the number of entry points that did not raise the expected CudaError, printing each.
int count_entry_points_not_failing_with(const std::vector<std::string>& needles) {
  int bad = 0;
  for (const auto& ep : entry_points()) {
    try {
      ep.call();
      std::fprintf(stderr, "%s: returned normally, expected CudaError\n", ep.name);
      ++bad;
    } catch (const rt::CudaError& e) {
      const std::string what = e.what();
      for (const auto& needle : needles) {
        if (what.find(needle) == std::string::npos) {
          std::fprintf(stderr, "%s: message lacks \"%s\": %s\n", ep.name, needle.c_str(), what.c_str());
          ++bad;
        }
      }
      if (e.call().empty() || e.code() == 0 || e.name().empty()) {
        std::fprintf(stderr, "%s: CudaError without call/code/name: %s\n", ep.name, what.c_str());
        ++bad;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: threw another exception: %s\n", ep.name, e.what());
      ++bad;
    }
  }
  return bad;
}

// Runs in a re-executed child (death-test machinery) so that the driver loads afresh with `library`.
[[noreturn]] void run_with_library(const char* library, const std::vector<std::string>& needles) {
  setenv("WARPWEAVE_LIBCUDA", library, 1);
  int bad = 0;
  if (rt::driver_available()) {
    std::fprintf(stderr, "driver_available() is true with WARPWEAVE_LIBCUDA=%s\n", library);
    ++bad;
  }
  const std::string reason = rt::driver_unavailable_reason();
  for (const auto& needle : needles) {
    if (reason.find(needle) == std::string::npos) {
      std::fprintf(stderr, "driver_unavailable_reason() lacks \"%s\": %s\n", needle.c_str(), reason.c_str());
      ++bad;
    }
  }
  bad += count_entry_points_not_failing_with(needles);
  static int on_the_host = 0;  // what an address is, is answered without a driver too: nothing the driver knows
  if (rt::pointer_memory_type(reinterpret_cast<std::uintptr_t>(&on_the_host)) != rt::MemoryType::unknown) {
    std::fprintf(stderr, "pointer_memory_type of a host address is not unknown without a driver\n");
    ++bad;
  }
  std::fprintf(stderr, "checked with WARPWEAVE_LIBCUDA=%s: %s\n", library, reason.c_str());
  std::exit(bad == 0 ? 0 : 1);
}

class NoDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    // Re-execute rather than fork: the parent may already have loaded a real driver.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(NoDriver, MissingLibraryPath) {
  EXPECT_EXIT(run_with_library(
                  "/nonexistent/warpweave/libcuda.so.1",
                  {"CUDA driver libcuda.so.1 not found: ", "/nonexistent/warpweave/libcuda.so.1", "WARPWEAVE_LIBCUDA"}),
              ::testing::ExitedWithCode(0), "");
}

TEST_F(NoDriver, LibraryWithoutCudaSymbols) {
  EXPECT_EXIT(
      run_with_library("libm.so.6", {"CUDA driver libcuda.so.1 not usable: ", "libm.so.6", "cuGetProcAddress_v2"}),
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NoDriver, ToolkitStubLibrary) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  EXPECT_EXIT(run_with_library(stub, {"CUDA driver libcuda.so.1 not usable: ", "CUDA_ERROR_STUB_LIBRARY"}),
              ::testing::ExitedWithCode(0), "");
}

[[noreturn]] void check_error_fields_without_library() {
  setenv("WARPWEAVE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  int bad = 0;
  try {
    rt::DeviceBuffer b(16);
    bad = 1;
  } catch (const rt::CudaError& e) {
    if (e.code() != 3 || e.name() != "CUDA_ERROR_NOT_INITIALIZED" || e.call() != "cuMemAlloc" ||
        std::string(e.what()).rfind("CUDA driver libcuda.so.1 not found: ", 0) != 0) {
      std::fprintf(stderr, "code %d name %s call %s what %s\n", e.code(), e.name().c_str(), e.call().c_str(), e.what());
      bad = 1;
    }
  }
  std::exit(bad);
}

TEST_F(NoDriver, ErrorFieldsOfMissingLibrary) {
  EXPECT_EXIT(check_error_fields_without_library(), ::testing::ExitedWithCode(0), "");
}

// The library this process found by itself (no override): on a CPU machine it is missing.
TEST(NoDriverHere, DefaultLoaderState) {
  if (rt::driver_available()) GTEST_SKIP() << "a CUDA driver is present: nothing to check here";
  const std::string reason = rt::driver_unavailable_reason();
  EXPECT_NE(reason.find(kMissingDriverPrefix), std::string::npos) << reason;
  if (ww::runtime::detail::loaded_api() != nullptr) {
    // A driver without a usable device (cuInit failed): asking how many devices there are is not an error.
    if (ww::runtime::detail::init_result() == ww::runtime::detail::CUDA_ERROR_NO_DEVICE) {
      EXPECT_EQ(rt::device_count(), 0);
    }
    GTEST_SKIP() << "the driver loaded but is unusable: " << reason;
  }
  EXPECT_EQ(count_entry_points_not_failing_with({kMissingDriverPrefix}), 0);
  std::printf("driver unavailable here: %s\n", reason.c_str());
}

TEST(RuntimeApi, CudaErrorFormat) {
  try {
    ww::runtime::detail::throw_error(1, "cuExample", "some context");
    FAIL() << "throw_error returned";
  } catch (const rt::CudaError& e) {
    EXPECT_EQ(e.code(), 1);
    EXPECT_EQ(e.name(), "CUDA_ERROR_INVALID_VALUE");
    EXPECT_EQ(e.description(), "invalid argument");
    EXPECT_EQ(e.call(), "cuExample");
    EXPECT_EQ(e.detail(), "some context");
    EXPECT_STREQ(e.what(), "cuExample failed: CUDA_ERROR_INVALID_VALUE (invalid argument); some context");
  }
}

TEST(RuntimeApi, StreamRefConversions) {
  EXPECT_EQ(rt::StreamRef().handle(), nullptr);
  EXPECT_EQ(rt::StreamRef(0).handle(), nullptr);
  EXPECT_EQ(rt::StreamRef(nullptr).handle(), nullptr);
  const std::uintptr_t torch_style = 0x7f00deadbe00;  // what torch.cuda.current_stream().cuda_stream returns
  EXPECT_EQ(rt::StreamRef(torch_style).handle(), reinterpret_cast<void*>(torch_style));
  EXPECT_EQ(rt::StreamRef(static_cast<long long>(2)).handle(), reinterpret_cast<void*>(2));  // CU_STREAM_PER_THREAD
  int x = 0;
  EXPECT_EQ(rt::StreamRef(static_cast<void*>(&x)).handle(), &x);
  EXPECT_EQ(static_cast<rt::StreamRef>(rt::Stream{}).handle(), nullptr);
}

TEST(RuntimeApi, LaunchConfigDefaults) {
  rt::LaunchConfig c;
  EXPECT_EQ(c.grid.volume(), 1u);
  EXPECT_EQ(c.block.volume(), 1u);
  EXPECT_EQ(c.cluster.volume(), 0u);  // no cluster attribute unless asked
  EXPECT_FALSE(c.cooperative);
  rt::Dim3 d = 7;
  EXPECT_EQ(d.x, 7u);
  EXPECT_EQ(d.y, 1u);
  EXPECT_EQ(d.z, 1u);
}

TEST(RuntimeApi, TensorMapBlob) {
  static_assert(sizeof(rt::TensorMap) == 128);
  static_assert(alignof(rt::TensorMap) == 64);
  EXPECT_EQ(rt::tensor_map::kBFloat16, 9);
  EXPECT_EQ(rt::tensor_map::kSwizzle128B, 3);
  EXPECT_EQ(rt::tensor_map::kL2Promotion256B, 3);
  EXPECT_EQ(rt::tensor_map::kOobFillNanRequestZeroFma, 1);
}

TEST(RuntimeApi, TensorMapArgumentsCheckedBeforeTheDriver) {
  const std::uint64_t dims[2] = {64, 64};
  const std::uint64_t strides[1] = {256};
  const std::uint32_t box3[3] = {16, 16, 1};
  EXPECT_THROW(rt::encode_tiled(rt::tensor_map::kFloat32, 0x1000, dims, strides, box3, {}), std::invalid_argument);
  const std::uint64_t dims6[6] = {2, 2, 2, 2, 2, 2};
  EXPECT_THROW(rt::encode_tiled(rt::tensor_map::kFloat32, 0x1000, dims6, strides, box3, {}), std::invalid_argument);
  const int corner1[1] = {0};
  EXPECT_THROW(rt::encode_im2col(rt::tensor_map::kFloat16, 0x1000, dims, strides, corner1, corner1, 8, 8, {}),
               std::invalid_argument);
}

TEST(RuntimeApi, DeviceInfoText) {
  rt::DeviceInfo info;
  info.name = "Example GPU";
  info.cc_major = 9;
  info.cc_minor = 0;
  const std::string text = info.to_string();
  EXPECT_NE(text.find("Example GPU"), std::string::npos);
  EXPECT_NE(text.find("compute capability: 9.0 (sm_90)"), std::string::npos) << text;
  std::ostringstream os;
  os << info;
  EXPECT_EQ(os.str(), text);
}

// ---------------------------------------------------------------------------------------------------
// On a GPU.

std::string gpu_missing_reason() {
  try {
    return rt::device_count() > 0 ? "" : "the CUDA driver sees no device";
  } catch (const rt::CudaError& e) {
    return e.what();
  }
}

#define WW_REQUIRE_GPU()                                                     \
  do {                                                                       \
    const std::string ww_why_ = gpu_missing_reason();                        \
    if (!ww_why_.empty()) GTEST_SKIP() << "no CUDA driver/GPU: " << ww_why_; \
  } while (0)

constexpr std::uint32_t kPoison = 0xDEADBEEFu;  // a float bit pattern no sum of our inputs produces
constexpr unsigned kBlock = 256;
constexpr std::size_t kTail = 64;  // elements past n that the kernel must not touch

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = dist(gen);
    while (x == 0.0f);
  }
  return v;
}

// Device inputs and a poisoned output for ww_add_f32, and the check of the result.
class AddProblem {
 public:
  explicit AddProblem(std::uint32_t n, std::uint32_t seed = 1234)
      : n_(n),
        a_host_(random_floats(n, seed)),
        b_host_(random_floats(n, seed + 1)),
        a_(n * sizeof(float)),
        b_(n * sizeof(float)),
        out_((n + kTail) * sizeof(float)) {
    rt::memcpy_htod(a_.ptr(), a_host_.data(), n * sizeof(float));
    rt::memcpy_htod(b_.ptr(), b_host_.data(), n * sizeof(float));
    poison();
    rt::synchronize();  // pageable copies may still be in flight, and later launches may use other streams
    out_ptr_ = out_.ptr();
    a_ptr_ = a_.ptr();
    b_ptr_ = b_.ptr();
  }

  void poison(rt::StreamRef stream = {}) { rt::memset_d32_async(out_.ptr(), kPoison, n_ + kTail, stream); }

  // kernelParams of ww_add_f32: each entry points at the parameter's value.
  void** params() { return params_; }
  unsigned grid(unsigned multiple = 1) const {
    unsigned g = (n_ + kBlock - 1) / kBlock;
    return (g + multiple - 1) / multiple * multiple;
  }

  // Copies the output back (after the stream's work) and compares every element, and the tail.
  ::testing::AssertionResult check(rt::StreamRef stream = {}) {
    std::vector<std::uint32_t> out(n_ + kTail);
    rt::memcpy_dtoh_async(out.data(), out_.ptr(), out.size() * sizeof(float), stream);
    rt::synchronize(stream);
    std::size_t wrong = 0;
    std::ostringstream first;
    for (std::size_t i = 0; i < n_; ++i) {
      const float expected = a_host_[i] + b_host_[i];
      float got;
      std::memcpy(&got, &out[i], sizeof(got));
      if (got != expected) {
        if (wrong++ < 5)
          first << " [" << i << "] got " << got << " (0x" << std::hex << out[i] << std::dec << ") expected " << expected
                << ";";
      }
    }
    for (std::size_t i = n_; i < n_ + kTail; ++i) {
      if (out[i] != kPoison) {
        if (wrong++ < 5) first << " tail [" << i << "] overwritten;";
      }
    }
    if (wrong == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << wrong << " of " << n_ + kTail << " elements wrong:" << first.str();
  }

  std::uint32_t n() const { return n_; }

 private:
  std::uint32_t n_;
  std::vector<float> a_host_, b_host_;
  rt::DeviceBuffer a_, b_, out_;
  rt::DevicePtr out_ptr_ = 0, a_ptr_ = 0, b_ptr_ = 0;
  void* params_[4] = {&out_ptr_, &a_ptr_, &b_ptr_, &n_};
};

TEST(Gpu, DeviceQuery) {
  WW_REQUIRE_GPU();
  EXPECT_GE(rt::driver_version(), 12000);
  const int count = rt::device_count();
  ASSERT_GE(count, 1);
  for (int d = 0; d < count; ++d) {
    const rt::DeviceInfo info = rt::device_info(d);
    std::printf("%s", info.to_string().c_str());
    EXPECT_EQ(info.ordinal, d);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.cc_major, 7);
    EXPECT_GT(info.multiprocessor_count, 0);
    EXPECT_GE(info.max_threads_per_block, 1024);
    EXPECT_EQ(info.warp_size, 32);
    EXPECT_GE(info.max_shared_memory_per_block, 48 * 1024);
    EXPECT_GE(info.max_shared_memory_per_block_optin, info.max_shared_memory_per_block);
    EXPECT_GT(info.l2_cache_size, 0);
    EXPECT_GT(info.total_memory, 0u);
    if (info.cc_major >= 9) EXPECT_TRUE(info.cluster_launch);
  }
  rt::set_device(0);
  EXPECT_EQ(rt::current_device(), 0);
  EXPECT_THROW(rt::set_device(count), rt::CudaError);
  EXPECT_THROW(rt::device_info(count), rt::CudaError);
}

TEST(Gpu, AddKernelFromPtx) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  const rt::DeviceInfo info = rt::device_info(0);
  if (info.compute_capability() < 80) GTEST_SKIP() << "the test PTX targets sm_80";

  rt::Module module = rt::Module::load(kPtx);
  rt::Function add = module.function("ww_add_f32");
  EXPECT_EQ(add.name(), "ww_add_f32");
  EXPECT_GT(add.num_regs(), 0);
  EXPECT_EQ(add.local_size_bytes(), 0);
  EXPECT_GE(add.max_threads_per_block(), static_cast<int>(kBlock));
  std::printf("ww_add_f32: %d registers, %d B local, max %d threads per block\n", add.num_regs(),
              add.local_size_bytes(), add.max_threads_per_block());

  AddProblem p(1'000'003);  // not a multiple of the block: the bounds check matters

  // Legacy default stream, plain launch.
  rt::launch(add, p.grid(), kBlock, {0, 0, 0}, 0, 0, p.params());
  EXPECT_TRUE(p.check());

  // A created stream, passed as the integer handle frameworks hand out, through PreparedLaunch.
  rt::Stream stream = rt::Stream::create(/*non_blocking=*/true);
  const auto raw = reinterpret_cast<std::uintptr_t>(stream.handle());
  p.poison(raw);
  rt::LaunchConfig config;
  config.grid = p.grid();
  config.block = kBlock;
  config.stream = raw;
  rt::PreparedLaunch prepared(add, config);
  prepared(p.params());
  EXPECT_TRUE(p.check(raw));

  // Thread block clusters (sm_90+): the grid must be a multiple of the cluster.
  if (info.cluster_launch) {
    p.poison(stream);
    rt::launch(add, rt::LaunchConfig{p.grid(2), kBlock, {2, 1, 1}, 0, stream, false}, p.params());
    EXPECT_TRUE(p.check(stream));
    p.poison(stream);
    rt::PreparedLaunch clustered(add, rt::LaunchConfig{p.grid(4), kBlock, {4, 1, 1}, 0, stream, false});
    clustered(p.params());
    EXPECT_TRUE(p.check(stream));
  }

  // Dynamic shared memory beyond 48 KiB once the kernel allows it (the kernel ignores the memory).
  const int smem = info.max_shared_memory_per_block_optin - add.static_shared_size_bytes();
  add.set_max_dynamic_shared_memory(smem);
  EXPECT_EQ(add.attribute(rt::func_attr::kMaxDynamicSharedSizeBytes), smem);
  p.poison(stream);
  rt::launch(add, rt::LaunchConfig{p.grid(), kBlock, {0, 0, 0}, static_cast<std::size_t>(smem), stream, false},
             p.params());
  EXPECT_TRUE(p.check(stream));
}

TEST(Gpu, CooperativeLaunch) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  const rt::DeviceInfo info = rt::device_info(0);
  if (info.compute_capability() < 80) GTEST_SKIP() << "the test PTX targets sm_80";
  if (!info.cooperative_launch) GTEST_SKIP() << "device does not support cooperative launch";
  rt::Module module = rt::Module::load(kPtx);
  rt::Function add = module.function("ww_add_f32");
  // One block per multiprocessor is always co-resident.
  AddProblem p(static_cast<std::uint32_t>(info.multiprocessor_count) * kBlock - 5);
  rt::launch(add, rt::LaunchConfig{p.grid(), kBlock, {0, 0, 0}, 0, 0, true}, p.params());
  EXPECT_TRUE(p.check());
}

// Finds ptxas: $WARPWEAVE_PTXAS, the toolkit's default place, or PATH.
std::string find_ptxas() {
  if (const char* env = std::getenv("WARPWEAVE_PTXAS"); env && *env) return env;
  if (std::ifstream("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  if (std::system("command -v ptxas >/dev/null 2>&1") == 0) return "ptxas";
  return "";
}

TEST(Gpu, AddKernelFromCubin) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  const rt::DeviceInfo info = rt::device_info(0);
  if (info.compute_capability() < 80) GTEST_SKIP() << "the test PTX targets sm_80";
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas to build a cubin with";

  char dir_template[] = "/tmp/ww_runtime_test_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  const std::string ptx_path = std::string(dir) + "/k.ptx";
  const std::string cubin_path = std::string(dir) + "/k.cubin";
  std::ofstream(ptx_path) << kPtx;
  const std::string arch = "sm_" + std::to_string(info.compute_capability());
  const std::string cmd = "'" + ptxas + "' -arch=" + arch + " -o '" + cubin_path + "' '" + ptx_path + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(cubin_path, std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(ptx_path.c_str());
  std::remove(cubin_path.c_str());
  std::remove(dir);
  ASSERT_GT(cubin.size(), 4u);
  ASSERT_EQ(cubin.substr(1, 3), "ELF");

  rt::Module module = rt::Module::load(cubin.data(), cubin.size());
  rt::Function add = module.function("ww_add_f32");
  AddProblem p(77'777, 99);
  rt::launch(add, p.grid(), kBlock, {0, 0, 0}, 0, 0, p.params());
  EXPECT_TRUE(p.check());
}

TEST(Gpu, LaunchErrorsNameTheCall) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  const rt::DeviceInfo info = rt::device_info(0);
  if (info.compute_capability() < 80) GTEST_SKIP() << "the test PTX targets sm_80";
  rt::Module module = rt::Module::load(kPtx);
  rt::Function add = module.function("ww_add_f32");
  AddProblem p(4096);

  const unsigned too_many = static_cast<unsigned>(info.max_threads_per_block) * 2;
  try {
    rt::launch(add, 1, too_many, {0, 0, 0}, 0, 0, p.params());
    FAIL() << "a launch of " << too_many << " threads per block succeeded";
  } catch (const rt::CudaError& e) {
    std::printf("expected: %s\n", e.what());
    EXPECT_EQ(e.call(), "cuLaunchKernelEx");
    EXPECT_NE(e.code(), 0);
    EXPECT_NE(std::string(e.what()).find("cuLaunchKernelEx failed: "), std::string::npos);
    EXPECT_NE(e.detail().find("ww_add_f32"), std::string::npos) << e.detail();
  }
  try {
    rt::PreparedLaunch bad(add, rt::LaunchConfig{1, too_many});
    bad(p.params());
    FAIL() << "a prepared launch of " << too_many << " threads per block succeeded";
  } catch (const rt::CudaError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernel");
  }

  // More dynamic shared memory than the device has, whatever the kernel allows.
  try {
    rt::launch(add, rt::LaunchConfig{1, 32, {0, 0, 0}, 4u << 20, 0, false}, p.params());
    FAIL() << "a launch with 4 MiB of dynamic shared memory succeeded";
  } catch (const rt::CudaError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernelEx");
  }

  EXPECT_THROW(rt::launch(rt::Function{}, 1, 32, {0, 0, 0}, 0, 0, nullptr), rt::CudaError);

  // Launch-configuration errors are not sticky: the context still works.
  EXPECT_NO_THROW(rt::synchronize());
  rt::launch(add, p.grid(), kBlock, {0, 0, 0}, 0, 0, p.params());
  EXPECT_TRUE(p.check());
}

TEST(Gpu, ModuleErrors) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  try {
    rt::Module::load(
        std::string_view(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n"));
    FAIL() << "bad PTX loaded";
  } catch (const rt::CudaError& e) {
    std::printf("expected: %s\n", e.what());
    EXPECT_EQ(e.call(), "cuModuleLoadDataEx");
    EXPECT_NE(e.code(), 0);
    EXPECT_NE(e.detail().find("JIT-compiling PTX"), std::string::npos) << e.detail();
  }
  rt::Module module = rt::Module::load(kPtx);
  try {
    module.function("no_such_kernel");
    FAIL() << "found a kernel that does not exist";
  } catch (const rt::CudaError& e) {
    EXPECT_EQ(e.call(), "cuModuleGetFunction");
    EXPECT_EQ(e.name(), "CUDA_ERROR_NOT_FOUND");
    EXPECT_NE(e.detail().find("no_such_kernel"), std::string::npos);
  }
  rt::Module moved = std::move(module);
  EXPECT_FALSE(module);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_TRUE(moved.function("ww_empty"));
}

TEST(Gpu, MemoryStreamsEvents) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  const std::size_t n = (1 << 20) + 3;
  rt::DeviceBuffer a(n * 4), b(n * 4);
  EXPECT_EQ(rt::pointer_device(a.ptr()), rt::current_device());
  EXPECT_EQ(rt::pointer_memory_type(a.ptr()), rt::MemoryType::device);
  EXPECT_EQ(rt::pointer_memory_type(a.ptr() + n * 4 - 1), rt::MemoryType::device);  // inside, not only the start

  std::vector<std::uint32_t> host(n);
  EXPECT_EQ(rt::pointer_memory_type(reinterpret_cast<std::uintptr_t>(host.data())), rt::MemoryType::unknown);
  std::mt19937 gen(7);
  for (auto& x : host) x = gen() | 1u;
  rt::memcpy_htod(a.ptr(), host.data(), n * 4);
  rt::memset_d32(b.ptr(), kPoison, n);
  rt::memcpy_dtod(b.ptr(), a.ptr(), n * 4);
  std::vector<std::uint32_t> back(n, 0);
  rt::memcpy_dtoh(back.data(), b.ptr(), n * 4);
  EXPECT_EQ(back, host);

  rt::Stream s = rt::Stream::create();
  rt::memset_d8_async(b.ptr(), 0x5a, n * 4, s);
  std::vector<std::uint8_t> bytes(n * 4, 0);
  rt::memcpy_dtoh_async(bytes.data(), b.ptr(), n * 4, s);
  s.synchronize();
  EXPECT_TRUE(s.query());
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t v) { return v == 0x5a; }));

  rt::memcpy_htod_async(b.ptr(), host.data(), n * 4, s);
  rt::memset_d32_async(a.ptr(), kPoison, n, s);
  rt::memcpy_dtod_async(a.ptr(), b.ptr(), n * 4, s);
  std::fill(back.begin(), back.end(), 0u);
  rt::memcpy_dtoh_async(back.data(), a.ptr(), n * 4, s);
  rt::synchronize(s);
  EXPECT_EQ(back, host);

  rt::DeviceBuffer moved = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.size(), n * 4);
  moved.reset();
  EXPECT_FALSE(moved);
  EXPECT_FALSE(rt::DeviceBuffer(0));

  rt::Module module = rt::Module::load(kPtx);
  rt::Function empty = module.function("ww_empty");
  rt::Event start = rt::Event::create(), stop = rt::Event::create();
  start.record(s);
  for (int i = 0; i < 100; ++i) rt::launch(empty, 1, 32, {0, 0, 0}, 0, s, nullptr);
  stop.record(s);
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  const float ms = rt::elapsed_ms(start, stop);
  EXPECT_GE(ms, 0.0f);
  std::printf("100 empty kernels on a stream: %.3f ms of GPU time\n", ms);
  rt::Stream s2 = std::move(s);
  s2.synchronize();
  rt::synchronize();
}

// A thread with no current context: launches bind the kernel's context, memory calls the primary one.
TEST(Gpu, WorksFromAFreshThread) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  if (rt::device_info(0).compute_capability() < 80) GTEST_SKIP() << "the test PTX targets sm_80";
  rt::Module module = rt::Module::load(kPtx);
  rt::Function add = module.function("ww_add_f32");
  AddProblem p(5000);
  rt::synchronize();
  std::string error;
  std::thread worker([&] {
    try {
      rt::launch(add, p.grid(), kBlock, {0, 0, 0}, 0, 0, p.params());
      rt::synchronize();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  worker.join();
  EXPECT_EQ(error, "");
  EXPECT_TRUE(p.check());

  p.poison();
  rt::synchronize();
  std::thread worker2([&] {
    try {
      rt::PreparedLaunch prepared(add, rt::LaunchConfig{p.grid(), kBlock});
      prepared(p.params());
      rt::synchronize();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  worker2.join();
  EXPECT_EQ(error, "");
  EXPECT_TRUE(p.check());
}

TEST(Gpu, TensorMaps) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  if (rt::device_info(0).cc_major < 9) GTEST_SKIP() << "tensor maps need sm_90+";
  namespace tm = rt::tensor_map;
  auto nonzero = [](const rt::TensorMap& m) {
    return std::any_of(std::begin(m.opaque), std::end(m.opaque), [](std::uint64_t q) { return q != 0; });
  };

  // A 256 x 256 fp16 row-major matrix in 64 x 64 boxes, 128-byte swizzle: the usual GEMM operand.
  rt::DeviceBuffer matrix(256 * 256 * 2);
  const std::uint64_t dims[2] = {256, 256};
  const std::uint64_t strides[1] = {256 * 2};
  const std::uint32_t box[2] = {64, 64};
  const rt::TensorMap tiled = rt::encode_tiled(tm::kFloat16, matrix.ptr(), dims, strides, box, {}, tm::kInterleaveNone,
                                               tm::kSwizzle128B, tm::kL2Promotion256B, tm::kOobFillNone);
  EXPECT_TRUE(nonzero(tiled));

  const std::uint32_t too_big_box[2] = {512, 64};  // box extents are at most 256
  try {
    rt::encode_tiled(tm::kFloat16, matrix.ptr(), dims, strides, too_big_box, {});
    FAIL() << "a 512-element box was accepted";
  } catch (const rt::CudaError& e) {
    EXPECT_EQ(e.call(), "cuTensorMapEncodeTiled");
    EXPECT_NE(e.detail().find("box_dim {512, 64}"), std::string::npos) << e.detail();
  }

  // NHWC fp16, N=2, H=W=16, C=64, for a 3x3 convolution with padding 1.
  rt::DeviceBuffer activations(2 * 16 * 16 * 64 * 2);
  const std::uint64_t dims4[4] = {64, 16, 16, 2};
  const std::uint64_t strides4[3] = {64 * 2, 64 * 2 * 16, 64 * 2 * 16 * 16};
  const int lower[2] = {-1, -1};
  const int upper[2] = {-1, -1};
  const rt::TensorMap im2col = rt::encode_im2col(tm::kFloat16, activations.ptr(), dims4, strides4, lower, upper, 64,
                                                 128, {}, tm::kInterleaveNone, tm::kSwizzleNone);
  EXPECT_TRUE(nonzero(im2col));
}

// Host cost of a launch: 100 batches of 100 launches of an empty kernel per path, the GPU drained between
// batches so the queue never fills and the timing is the host's. Printed, not asserted.
TEST(Gpu, LaunchOverhead) {
  WW_REQUIRE_GPU();
  rt::set_device(0);
  rt::Module module = rt::Module::load(kPtx);
  rt::Function empty = module.function("ww_empty");
  const auto& driver = ww::runtime::detail::api("cuLaunchKernel");
  auto* fn = static_cast<ww::runtime::detail::CUfunction>(empty.handle());

  constexpr int kBatches = 100, kPerBatch = 100;
  auto median_us = [&](const std::function<void()>& launch_once) {
    for (int i = 0; i < 1000; ++i) launch_once();  // warm-up
    rt::synchronize();
    std::vector<double> per_launch;
    for (int b = 0; b < kBatches; ++b) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kPerBatch; ++i) launch_once();
      const auto t1 = std::chrono::steady_clock::now();
      rt::synchronize();
      per_launch.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kPerBatch);
    }
    std::nth_element(per_launch.begin(), per_launch.begin() + kBatches / 2, per_launch.end());
    return per_launch[kBatches / 2];
  };

  int raw_failures = 0;
  const double raw = median_us(
      [&] { raw_failures += driver.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) != 0; });
  ASSERT_EQ(raw_failures, 0);
  const double ex = median_us([&] { rt::launch(empty, 1, 32, {0, 0, 0}, 0, 0, nullptr); });
  rt::PreparedLaunch prepared(empty, rt::LaunchConfig{1, 32});
  const double prep = median_us([&] { prepared(nullptr); });
  rt::Stream stream = rt::Stream::create(true);
  prepared.set_stream(stream);
  const double prep_stream = median_us([&] { prepared(nullptr); });

  std::printf("launch host cost, empty kernel, median of %d x %d launches:\n", kBatches, kPerBatch);
  std::printf("  raw cuLaunchKernel (driver table)        %.3f us\n", raw);
  std::printf("  ww::runtime::launch (cuLaunchKernelEx)   %.3f us\n", ex);
  std::printf("  PreparedLaunch (cuLaunchKernel)          %.3f us\n", prep);
  std::printf("  PreparedLaunch on a created stream       %.3f us\n", prep_stream);
  RecordProperty("raw_cuLaunchKernel_us", std::to_string(raw));
  RecordProperty("launch_us", std::to_string(ex));
  RecordProperty("prepared_launch_us", std::to_string(prep));
}

}  // namespace
