/* A stand-in for libcuda.so.1 with the entry points an exported warpweave wrapper calls, for testing exported
   functions on machines without a GPU: it checks that the module image is an ELF cubin (and writes it to
   $WW_MOCK_DUMP), and prints every launch (grid, block, shared memory, stream, attributes, and the bytes of each
   parameter, whose sizes $WW_MOCK_PARAM_SIZES lists, comma-separated) to stdout. Nothing runs. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef struct { unsigned x, y, z; } dim3_t;
typedef struct { int id; char pad[4]; union { char pad[64]; dim3_t clusterDim; int cooperative; unsigned words[4]; } value; } attr_t;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  CUstream stream;
  attr_t *attrs;
  unsigned num_attrs;
} config_t;

static int ctx_token, module_token;
static CUcontext current;

/* WW_MOCK_STUB: answers as the CUDA toolkit's stub library does (CUDA_ERROR_STUB_LIBRARY, no error names) */
CUresult cuInit(unsigned flags) { return getenv("WW_MOCK_STUB") ? 34 : flags == 0 ? 0 : 1; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return 0; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return 0; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, int d) { (void)d; *c = &ctx_token; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) {
  (void)e;
  if (getenv("WW_MOCK_STUB")) return 34;
  *s = "mock driver error";
  return 0;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  const unsigned char *p = (const unsigned char *)image;
  uint64_t shoff, phoff, end;
  uint16_t shentsize, shnum, phentsize, phnum;
  if (memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&shentsize, p + 0x3A, 2);
  memcpy(&shnum, p + 0x3C, 2);
  memcpy(&phoff, p + 0x20, 8);
  memcpy(&phentsize, p + 0x36, 2);
  memcpy(&phnum, p + 0x38, 2);
  end = shoff + (uint64_t)shentsize * shnum; /* the image ends with its last header table */
  if (phoff + (uint64_t)phentsize * phnum > end) end = phoff + (uint64_t)phentsize * phnum;
  const char *dump = getenv("WW_MOCK_DUMP");
  if (dump) {
    FILE *f = fopen(dump, "wb");
    if (!f) return 999;
    fwrite(p, 1, (size_t)end, f);
    fclose(f);
  }
  printf("load %s\n", current ? "in-context" : "no-context");
  *m = &module_token;
  return 0;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  if (m != &module_token) return 400;
  *f = strdup(name);
  printf("function %s\n", name);
  return 0;
}

CUresult cuModuleUnload(CUmodule m) { printf("unload\n"); return m == &module_token ? 0 : 400; }

CUresult cuFuncSetAttribute(CUfunction f, int attribute, int value) {
  printf("attribute %s %d %d\n", (const char *)f, attribute, value);
  return 0;
}

/* The sizes of a kernel's parameters: $WW_MOCK_PARAM_SIZES, or, where the kernels differ, this kernel's entry of
   $WW_MOCK_KERNEL_PARAM_SIZES ("kernel:8,4;other:8,4,8"). */
static const char *param_sizes(const char *kernel) {
  const char *all = getenv("WW_MOCK_KERNEL_PARAM_SIZES");
  size_t n = strlen(kernel);
  while (all && *all) {
    if (strncmp(all, kernel, n) == 0 && all[n] == ':') return all + n + 1;
    all = strchr(all, ';');
    if (all) ++all;
  }
  return getenv("WW_MOCK_PARAM_SIZES");
}

static void print_params(const char *kernel, void **params) {
  const char *sizes = param_sizes(kernel);
  int j = 0;
  while (sizes && *sizes) {
    long n = strtol(sizes, (char **)&sizes, 10);
    int last = *sizes == ';';  /* the end of this kernel's entry */
    if (*sizes == ',') ++sizes;
    printf("param %d ", j);
    for (long k = 0; k < n; ++k) printf("%02x", ((const unsigned char *)params[j])[k]);
    printf("\n");
    ++j;
    if (last) break;
  }
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream stream, void **params, void **extra) {
  static int quiet = -1; /* $WW_MOCK_QUIET: record nothing (timing the host side of a call) */
  if (quiet < 0) quiet = getenv("WW_MOCK_QUIET") != NULL;
  if (quiet) return params == NULL;
  printf("launch %s grid %u %u %u block %u %u %u smem %u stream %llu extra %d\n", (const char *)f, gx, gy, gz, bx,
         by, bz, smem, (unsigned long long)(uintptr_t)stream, extra != NULL);
  print_params((const char *)f, params);
  return 0;
}

CUresult cuLaunchKernelEx(const config_t *c, CUfunction f, void **params, void **extra) {
  static int quiet = -1; /* as cuLaunchKernel's (the Python call's launches come here) */
  if (quiet < 0) quiet = getenv("WW_MOCK_QUIET") != NULL;
  if (quiet) return params == NULL;
  printf("launch %s grid %u %u %u block %u %u %u smem %u stream %llu extra %d\n", (const char *)f, c->gx, c->gy,
         c->gz, c->bx, c->by, c->bz, c->smem, (unsigned long long)(uintptr_t)c->stream, extra != NULL);
  for (unsigned i = 0; i < c->num_attrs; ++i)
    printf("attr %d %u %u %u %u\n", c->attrs[i].id, c->attrs[i].value.words[0], c->attrs[i].value.words[1],
           c->attrs[i].value.words[2], c->attrs[i].value.words[3]);
  print_params((const char *)f, params);
  return 0;
}

/* Memory and streams for programs that allocate (host memory stands in; kernels never run, so results are not
   computed). */
typedef unsigned long long CUdeviceptr;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) { *p = (CUdeviceptr)(uintptr_t)malloc(bytes); return *p ? 0 : 2; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return 0; }
static int stream_token;
CUresult cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = &stream_token; return 0; }
CUresult cuStreamSynchronize(CUstream s) { (void)s; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuStreamDestroy_v2(CUstream s) { return s == &stream_token ? 0 : 400; }

/* A tensor map: its arguments printed, its 128 bytes a pattern of them (so that a test sees them copied into the
   kernel's parameters). */
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box, const unsigned *elem,
                                int interleave, int swizzle, int l2, int oob) {
  unsigned char *m = (unsigned char *)map;
  if ((uintptr_t)map % 64 != 0) return 1;
  printf("tensormap dtype %d rank %u addr %llu", dtype, rank, (unsigned long long)(uintptr_t)addr);
  for (unsigned i = 0; i < rank; ++i) printf(" dim %llu", dims[i]);
  for (unsigned i = 0; i + 1 < rank; ++i) printf(" stride %llu", strides[i]);
  for (unsigned i = 0; i < rank; ++i) printf(" box %u", box[i]);
  for (unsigned i = 0; i < rank; ++i) printf(" elem %u", elem[i]);
  printf(" interleave %d swizzle %d l2 %d oob %d\n", interleave, swizzle, l2, oob);
  for (int i = 0; i < 128; ++i) m[i] = (unsigned char)(i * 7 + dims[0] + box[0] + swizzle);
  return 0;
}

/* The way in of warpweave's own runtime (core/runtime/driver_api.cpp), so that compiled calls load and launch
   here too: cuDriverGetVersion and cuGetProcAddress_v2, which hands out this file's entries by name (the _v2 form
   first, as the driver does for the versions the runtime asks for) and, for the others, a stub that refuses. */
CUresult cuDriverGetVersion(int *v) { *v = 12080; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) { (void)e; *s = "CUDA_ERROR_MOCK"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuFuncGetAttribute(int *v, int attribute, CUfunction f) { (void)attribute; (void)f; *v = 0; return 0; }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *options, void **values) {
  (void)n; (void)options; (void)values;
  return cuModuleLoadData(m, image);
}
static CUresult mock_not_supported(void) { return 801; /* CUDA_ERROR_NOT_SUPPORTED */ }

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  static void *self;
  char name[160];
  Dl_info info;
  (void)version; (void)flags;
  if (!self && dladdr((void *)&cuGetProcAddress_v2, &info) && info.dli_fname)
    self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  *pfn = NULL;
  if (self && strlen(symbol) + 4 < sizeof(name)) {
    snprintf(name, sizeof(name), "%s_v2", symbol);
    *pfn = dlsym(self, name);
    if (!*pfn) *pfn = dlsym(self, symbol);
  }
  if (!*pfn) *pfn = (void *)&mock_not_supported;
  if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
  return 0;
}
