/* A recorder of what a process asks the CUDA driver to launch, for comparing two implementations' host sides with
   one tool (same_source_variants.py --record-launches): loaded with LD_PRELOAD, it stands between the process and
   the driver's entry points and writes, once per distinct value, to the file $WW_LAUNCH_LOG:
     launch    kernel name, grid, block, dynamic shared memory, every launch attribute (id and its first 4 words)
               and the kernel's function attributes 0..15 (registers, shared sizes, cluster requirements, carveout)
     tensormap every cuTensorMapEncodeTiled's data type, rank, extents, strides, box, element strides, interleave,
               swizzle, L2 promotion and out-of-bounds fill (the address left out)
     funcattr  every cuFuncSetAttribute (attribute, value)
     occupancy every cuOccupancyMaxActiveClusters (grid, block, shared memory, attributes, the answer)
   and, when the process exits, how many times each line's call was made ("count N <line>").
   The driver's entry points reach a process by dlsym of the library or through cuGetProcAddress (CUDA's runtime,
   cuda-python and warpweave's runtime all take that way), so both are wrapped: dlsym by interposition (RTLD_NEXT's
   dlsym found with dlvsym), cuGetProcAddress's answers by replacing the pointers it hands out for the entries above.
   Only the default-stream forms are wrapped (a per-thread-stream query gets the driver's own entry); the first
   pointer a name resolves to is the one wrapped, and any other the process is given for that name passes through.
   Build: cc -shared -fPIC -O2 -o launch_recorder.so launch_recorder.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct {
  int id;
  char pad[4];
  union {
    char bytes[64];
    unsigned words[16];
  } value;
} attr_t; /* CUlaunchAttribute */
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  void *stream;
  attr_t *attrs;
  unsigned num_attrs;
} config_t; /* CUlaunchConfig */

typedef void *(*dlsym_fn)(void *, const char *);
typedef CUresult (*getproc_v2_fn)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*getproc_fn)(const char *, void **, int, unsigned long long);
typedef CUresult (*encode_fn)(void *, int, unsigned, void *, const unsigned long long *, const unsigned long long *,
                              const unsigned *, const unsigned *, int, int, int, int);
typedef CUresult (*launch_ex_fn)(const config_t *, void *, void **, void **);
typedef CUresult (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                              void **, void **);
typedef CUresult (*set_attr_fn)(void *, int, int);
typedef CUresult (*occupancy_fn)(int *, void *, const config_t *);
typedef CUresult (*get_attr_fn)(int *, int, void *);
typedef CUresult (*get_name_fn)(const char **, void *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static getproc_v2_fn real_getproc_v2;
static getproc_fn real_getproc;
static encode_fn real_encode;
static launch_ex_fn real_launch_ex;
static launch_fn real_launch;
static set_attr_fn real_set_attr;
static occupancy_fn real_occupancy;

/* --- the log: each distinct line written once, counted ------------------------------------------------------- */
enum { MAX_LINES = 256 };
static char *lines[MAX_LINES];
static unsigned long counts[MAX_LINES];
static int num_lines, dropped;

static FILE *log_file(void) {
  static FILE *f;
  static int tried;
  if (!tried) {
    const char *path = getenv("WW_LAUNCH_LOG");
    tried = 1;
    f = path && *path ? fopen(path, "a") : NULL;
  }
  return f;
}

static void record(const char *line) {
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < num_lines && strcmp(lines[i], line) != 0) ++i;
  if (i < num_lines) {
    ++counts[i];
  } else if (num_lines < MAX_LINES) {
    lines[num_lines] = strdup(line);
    counts[num_lines++] = 1;
    FILE *f = log_file();
    if (f) {
      fprintf(f, "%s\n", line);
      fflush(f);
    }
  } else {
    ++dropped;
  }
  pthread_mutex_unlock(&lock);
}

__attribute__((destructor)) static void write_counts(void) {
  FILE *f = log_file();
  if (!f) return;
  for (int i = 0; i < num_lines; ++i) fprintf(f, "count %lu %s\n", counts[i], lines[i]);
  if (dropped) fprintf(f, "dropped %d\n", dropped);
  fflush(f);
}

/* Appends printf-style text to buf (of size n) at *at, never past its end. */
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *at, const char *fmt, ...) {
  if (*at >= n) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *at, n - *at, fmt, ap);
  va_end(ap);
  if (w > 0) *at += (size_t)w;
}

/* --- what is written of a kernel ------------------------------------------------------------------------------ */
static void *driver_entry(const char *name) {
  void *p = NULL;
  if (real_getproc_v2) real_getproc_v2(name, &p, 12080, 0, NULL);
  else if (real_getproc) real_getproc(name, &p, 12080, 0);
  return p;
}

static void kernel_text(void *f, char *buf, size_t n, size_t *at) {
  static get_name_fn get_name;
  static get_attr_fn get_attr;
  static int looked;
  if (!looked) {
    looked = 1;
    get_name = (get_name_fn)driver_entry("cuFuncGetName");
    get_attr = (get_attr_fn)driver_entry("cuFuncGetAttribute");
  }
  const char *name = NULL;
  if (!get_name || get_name(&name, f) != 0 || !name) name = "?";
  put(buf, n, at, " kernel %s funcattrs", name);
  for (int a = 0; a < 16; ++a) {
    int v = -1;
    if (!get_attr || get_attr(&v, a, f) != 0) v = -1;
    put(buf, n, at, " %d", v);
  }
}

static void attrs_text(const attr_t *attrs, unsigned num, char *buf, size_t n, size_t *at) {
  for (unsigned i = 0; i < num; ++i)
    put(buf, n, at, " attr %d %u %u %u %u", attrs[i].id, attrs[i].value.words[0], attrs[i].value.words[1],
        attrs[i].value.words[2], attrs[i].value.words[3]);
}

/* --- the wrapped entry points ---------------------------------------------------------------------------------- */
static CUresult my_encode(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                          const unsigned long long *strides, const unsigned *box, const unsigned *elem, int interleave,
                          int swizzle, int l2, int oob) {
  char buf[1024];
  size_t at = 0;
  put(buf, sizeof buf, &at, "tensormap dtype %d rank %u dims", dtype, rank);
  for (unsigned i = 0; i < rank && i < 5; ++i) put(buf, sizeof buf, &at, " %llu", dims[i]);
  put(buf, sizeof buf, &at, " strides");
  for (unsigned i = 0; i + 1 < rank && i < 4; ++i) put(buf, sizeof buf, &at, " %llu", strides[i]);
  put(buf, sizeof buf, &at, " box");
  for (unsigned i = 0; i < rank && i < 5; ++i) put(buf, sizeof buf, &at, " %u", box[i]);
  put(buf, sizeof buf, &at, " elem");
  for (unsigned i = 0; i < rank && i < 5; ++i) put(buf, sizeof buf, &at, " %u", elem ? elem[i] : 0u);
  put(buf, sizeof buf, &at, " interleave %d swizzle %d l2 %d oob %d", interleave, swizzle, l2, oob);
  record(buf);
  return real_encode(map, dtype, rank, addr, dims, strides, box, elem, interleave, swizzle, l2, oob);
}

static CUresult my_launch_ex(const config_t *c, void *f, void **params, void **extra) {
  char buf[2048];
  size_t at = 0;
  put(buf, sizeof buf, &at, "launch grid %u %u %u block %u %u %u smem %u", c->gx, c->gy, c->gz, c->bx, c->by, c->bz,
      c->smem);
  attrs_text(c->attrs, c->num_attrs, buf, sizeof buf, &at);
  kernel_text(f, buf, sizeof buf, &at);
  record(buf);
  return real_launch_ex(c, f, params, extra);
}

static CUresult my_launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned smem, void *stream, void **params, void **extra) {
  char buf[2048];
  size_t at = 0;
  put(buf, sizeof buf, &at, "launch grid %u %u %u block %u %u %u smem %u", gx, gy, gz, bx, by, bz, smem);
  kernel_text(f, buf, sizeof buf, &at);
  record(buf);
  return real_launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
}

static CUresult my_set_attr(void *f, int attribute, int value) {
  char buf[1024];
  size_t at = 0;
  put(buf, sizeof buf, &at, "funcattr set %d %d", attribute, value);
  kernel_text(f, buf, sizeof buf, &at);
  record(buf);
  return real_set_attr(f, attribute, value);
}

static CUresult my_occupancy(int *clusters, void *f, const config_t *c) {
  CUresult r = real_occupancy(clusters, f, c);
  char buf[2048];
  size_t at = 0;
  put(buf, sizeof buf, &at, "occupancy clusters %d result %d grid %u %u %u block %u %u %u smem %u",
      r == 0 && clusters ? *clusters : -1, r, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem);
  attrs_text(c->attrs, c->num_attrs, buf, sizeof buf, &at);
  kernel_text(f, buf, sizeof buf, &at);
  record(buf);
  return r;
}

static CUresult my_getproc_v2(const char *, void **, int, unsigned long long, int *);
static CUresult my_getproc(const char *, void **, int, unsigned long long);

/* The pointer handed to the process for entry `name` whose driver entry is p. */
static void *wrap(const char *name, void *p) {
  if (!p || !name) return p;
  static const struct {
    const char *name;
    void **real;
    void *mine;
  } table[] = {
      {"cuGetProcAddress_v2", (void **)&real_getproc_v2, (void *)my_getproc_v2},
      {"cuGetProcAddress", (void **)&real_getproc, (void *)my_getproc},
      {"cuTensorMapEncodeTiled", (void **)&real_encode, (void *)my_encode},
      {"cuLaunchKernelEx", (void **)&real_launch_ex, (void *)my_launch_ex},
      {"cuLaunchKernel", (void **)&real_launch, (void *)my_launch},
      {"cuFuncSetAttribute", (void **)&real_set_attr, (void *)my_set_attr},
      {"cuOccupancyMaxActiveClusters", (void **)&real_occupancy, (void *)my_occupancy},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (p == table[i].mine) return p; /* already ours (a driver that resolves through dlsym itself) */
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (strcmp(name, table[i].name) != 0) continue;
    pthread_mutex_lock(&lock);
    if (!*table[i].real) *table[i].real = p;
    void *out = *table[i].real == p ? table[i].mine : p;
    pthread_mutex_unlock(&lock);
    return out;
  }
  return p;
}

enum { PER_THREAD_DEFAULT_STREAM = 2 }; /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */

static CUresult my_getproc_v2(const char *symbol, void **pfn, int version, unsigned long long flags, int *status) {
  CUresult r = real_getproc_v2(symbol, pfn, version, flags, status);
  if (r == 0 && pfn && !(flags & PER_THREAD_DEFAULT_STREAM)) *pfn = wrap(symbol, *pfn);
  return r;
}

static CUresult my_getproc(const char *symbol, void **pfn, int version, unsigned long long flags) {
  CUresult r = real_getproc(symbol, pfn, version, flags);
  if (r == 0 && pfn && !(flags & PER_THREAD_DEFAULT_STREAM)) *pfn = wrap(symbol, *pfn);
  return r;
}

void *dlsym(void *handle, const char *name) {
  static dlsym_fn real_dlsym;
  if (!real_dlsym) {
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym) real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  /* RTLD_NEXT means "after the caller": handed on as a tail call (the -O2 build makes it a jump), glibc still sees
     the caller's return address. No driver entry is looked up so. */
  if (handle == RTLD_NEXT) return real_dlsym(handle, name);
  return wrap(name, real_dlsym(handle, name));
}
