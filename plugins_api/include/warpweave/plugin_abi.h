/* warpweave backend plugin ABI, version 1.
 *
 * A backend is a shared library that exports (through Boost.DLL's alias, see warpweave/plugin.hpp) one entry
 * point returning a ww_plugin_v1 description. Only C types cross this boundary: no MLIR, LLVM or STL type, so a
 * plugin built with another compiler or standard library still loads. The core refuses a plugin whose
 * abi_version differs from WW_PLUGIN_ABI_VERSION, naming the file and both versions.
 *
 * What a plugin offers is described by its manifest (manifest.proto, in protobuf text format, embedded in the
 * library): targets, atoms, pipeline primitives. Most atoms lower through a PTX template in the manifest; an atom
 * or primitive that names a lowering hook is lowered by calling `lower`, which emits IR through the emitter the
 * core passes in. Host-side work (e.g. building a TMA descriptor) goes through `host_call`, with the driver
 * functions the core passes in.
 */
#ifndef WARPWEAVE_PLUGIN_ABI_H
#define WARPWEAVE_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WW_PLUGIN_ABI_VERSION 1u
/* The name under which a plugin exports its entry point (a function of type ww_plugin_entry_fn). */
/* The host hook a backend answers option queries with (see host_call). */
#define WW_OPTIONS_HOOK "options"
#define WW_PLUGIN_ENTRY_NAME "warpweave_plugin_entry_v1"

/* Return codes of plugin functions. */
enum ww_status { WW_OK = 0, WW_ERROR = 1, WW_UNKNOWN_HOOK = 2 };

/* An SSA value of the IR being built: an id the core hands out. */
typedef uint32_t ww_value;

/* The core's IR emitter, valid during one `lower` call. Types are MLIR type strings ("i32", "!llvm.ptr<3>"). */
typedef struct ww_emitter_v1 {
  void* ctx;
  /* Creates an op in MLIR's generic syntax; properties is the body of <{...}> or NULL. Writes the results. */
  int (*op)(void* ctx, const char* name, const ww_value* operands, size_t num_operands, const char* const* result_types,
            size_t num_results, const char* properties, ww_value* results);
  /* Raw PTX through llvm.inline_asm. */
  int (*inline_asm)(void* ctx, const char* asm_text, const char* constraints, const ww_value* operands,
                    size_t num_operands, const char* const* result_types, size_t num_results, int has_side_effects,
                    ww_value* results);
  int (*constant_int)(void* ctx, int64_t value, const char* type, ww_value* result);
  /* The type of a value; the string lives as long as the emitter. */
  const char* (*type_of)(void* ctx, ww_value value);
  /* Reports why lowering failed; the core raises it at the user's source line. */
  void (*error)(void* ctx, const char* message);
} ww_emitter_v1;

/* A named integer or string argument of a hook (e.g. {"swizzle", 128}). */
typedef struct ww_attr {
  const char* name;
  int64_t int_value;
  const char* str_value; /* NULL for integers */
} ww_attr;

/* Driver functions the core lends to host hooks (the plugin never loads the driver itself). */
typedef struct ww_host_services_v1 {
  void* ctx;
  /* cuTensorMapEncodeTiled with plain integers for the enums; writes 128 bytes to out. */
  int (*encode_tensor_map_tiled)(void* ctx, int data_type, uint32_t rank, uint64_t global_address,
                                 const uint64_t* global_dims, const uint64_t* global_strides_bytes,
                                 const uint32_t* box_dims, const uint32_t* element_strides, int interleave,
                                 int swizzle, int l2_promotion, int oob_fill, void* out, char* error,
                                 size_t error_size);
} ww_host_services_v1;

typedef struct ww_plugin_v1 {
  uint32_t abi_version; /* WW_PLUGIN_ABI_VERSION */
  const char* name;     /* must equal the manifest's name */
  /* The manifest, protobuf text format (manifest.proto). */
  const char* manifest_text;
  size_t manifest_size;
  /* Lowers `atom_or_primitive` (an id of the manifest) with the hook `hook`: emits IR for the operands and
   * writes up to max_results results. Returns WW_OK, WW_UNKNOWN_HOOK, or WW_ERROR after em->error(). */
  int (*lower)(const char* hook, const char* atom_or_primitive, const ww_emitter_v1* em, const ww_value* operands,
               size_t num_operands, const ww_attr* attrs, size_t num_attrs, ww_value* results, size_t max_results,
               size_t* num_results);
  /* Host-side work named by the manifest (e.g. "encode_tma_descriptor"): reads attrs, writes out. NULL if none.
   *
   * The host hook named WW_OPTIONS_HOOK is the backend's say in how code is built and run, in C strings only
   * (so that no schema field is needed per choice). Attributes: "stage" and the stage's own:
   *   stage "compile", "instruction" (an id of the manifest the module uses), "target": how to build a module
   *   that uses it. Keys: cubin_tool (ptxas | nvjitlink: the tool that keeps the instruction in the cubin).
   * It writes NUL-terminated "key=value" lines (a key may repeat) to out and returns WW_OK, or WW_UNKNOWN_HOOK
   * when it has nothing to say; the core ignores keys it does not know. */
  int (*host_call)(const char* name, const ww_host_services_v1* services, const ww_attr* attrs, size_t num_attrs,
                   void* out, size_t out_size, char* error, size_t error_size);
} ww_plugin_v1;

typedef const ww_plugin_v1* (*ww_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* WARPWEAVE_PLUGIN_ABI_H */
