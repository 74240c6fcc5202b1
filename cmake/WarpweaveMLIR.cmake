# MLIR/LLVM 22, linked statically, for the compiler (core/compiler) and whatever embeds it.
#
# Provides:
#   ww_mlir_static        INTERFACE target: MLIR/LLVM include directories (as SYSTEM) and the static archives the
#                         compiler needs, flattened to file paths in link order. Debian's MLIR targets list the
#                         shared `LLVM` dylib; here it is swapped for LLVM's static component libraries, so that
#                         nothing of LLVM is needed at run time. Carries no compile flags: LLVM's -fno-exceptions
#                         and friends stay out of our targets.
#   ww_self_contained_link(<target>)
#                         Link options for a shared object or executable that embeds the compiler and must run on
#                         another machine (Ubuntu 24.04, no LLVM there): static libstdc++/libgcc, LLVM's symbols
#                         hidden, unused sections dropped. The result needs only libc, libm, libz and libzstd.
#
# Cache variables: WW_LLVM_ROOT (install prefix of LLVM/MLIR 22; default from llvm-config-22).
include_guard(GLOBAL)

if(NOT WW_LLVM_ROOT)
  find_program(WW_LLVM_CONFIG NAMES llvm-config-22 PATHS /usr/lib/llvm-22/bin)
  if(WW_LLVM_CONFIG)
    execute_process(COMMAND ${WW_LLVM_CONFIG} --prefix OUTPUT_VARIABLE _ww_llvm_prefix
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
  else()
    set(_ww_llvm_prefix /usr/lib/llvm-22)
  endif()
  set(WW_LLVM_ROOT ${_ww_llvm_prefix} CACHE PATH "Install prefix of LLVM/MLIR 22")
endif()

# Explicit paths only: an unrelated LLVM (a conda one, llvm-14 from the distribution) must not be picked up. No
# version in the call: MLIR's version file accepts only an exact major.minor, and any 22.x will do.
find_package(MLIR REQUIRED CONFIG PATHS ${WW_LLVM_ROOT}/lib/cmake/mlir NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "warpweave needs MLIR/LLVM 22, found ${LLVM_PACKAGE_VERSION} in ${WW_LLVM_ROOT}")
endif()
message(STATUS "warpweave: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_CMAKE_DIR} (static)")

# What the compiler uses. The rest of the graph comes from the imported targets' own link interfaces.
set(WW_MLIR_LIBS
  MLIRIR MLIRParser MLIRPass MLIRTransforms MLIRTransformUtils
  MLIRArithDialect MLIRControlFlowDialect MLIRLLVMDialect MLIRNVVMDialect MLIRMathDialect MLIRMathTransforms
  MLIRSCFDialect MLIRUBDialect MLIRVectorDialect MLIRLLVMIRTransforms
  MLIRArithToLLVM MLIRControlFlowToLLVM MLIRMathToLLVM MLIRNVVMToLLVM MLIRReconcileUnrealizedCasts
  MLIRSCFToControlFlow MLIRUBToLLVM MLIRVectorToLLVMPass
  MLIRTargetLLVMIRExport MLIRBuiltinToLLVMIRTranslation MLIRLLVMToLLVMIRTranslation MLIRNVVMToLLVMIRTranslation)
# Stand-ins for the `LLVM` dylib: every component the MLIR libraries above and the NVPTX back end may reach.
set(WW_LLVM_COMPONENTS
  NVPTXCodeGen NVPTXDesc NVPTXInfo
  Passes CodeGen AsmPrinter SelectionDAG GlobalISel Target TargetParser MC MCParser
  Core Support Demangle BinaryFormat BitReader BitWriter IRReader AsmParser Linker Object
  Analysis TransformUtils ScalarOpts InstCombine IPO Vectorize ObjCARCOpts Instrumentation Coroutines CFGuard
  FrontendOpenMP FrontendOffloading FrontendAtomic FrontendHLSL HipStdPar)
llvm_map_components_to_libnames(WW_LLVM_COMPONENT_LIBS ${WW_LLVM_COMPONENTS})

# Depth-first walk of the imported targets' INTERFACE_LINK_LIBRARIES. Output in reverse post-order: every archive
# before the archives it needs, which is the order a single-pass static link wants.
function(_ww_visit item)
  if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
    set(item "${CMAKE_MATCH_1}")
  endif()
  if(item STREQUAL "LLVM")  # the shared dylib
    foreach(lib IN LISTS WW_LLVM_COMPONENT_LIBS)
      _ww_visit(${lib})
    endforeach()
    return()
  endif()
  get_property(seen GLOBAL PROPERTY _WW_SEEN)
  if("${item}" IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _WW_SEEN "${item}")

  if(TARGET ${item})
    get_target_property(type ${item} TYPE)
    if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(deps ${item} INTERFACE_LINK_LIBRARIES)
      if(deps)
        foreach(dep IN LISTS deps)
          _ww_visit(${dep})
        endforeach()
      endif()
    endif()
    if(type STREQUAL "INTERFACE_LIBRARY")
      # header-only: its dependencies are all there is
    elseif(type STREQUAL "STATIC_LIBRARY")
      get_target_property(configs ${item} IMPORTED_CONFIGURATIONS)
      list(GET configs 0 config)
      get_target_property(location ${item} IMPORTED_LOCATION_${config})
      set_property(GLOBAL APPEND PROPERTY _WW_ARCHIVES "${location}")
    elseif(item STREQUAL "zstd::libzstd_shared" OR item STREQUAL "zstd::libzstd_static")
      set_property(GLOBAL APPEND PROPERTY _WW_SYSTEM zstd)
    elseif(item STREQUAL "ZLIB::ZLIB")
      set_property(GLOBAL APPEND PROPERTY _WW_SYSTEM z)
    else()
      message(FATAL_ERROR "WarpweaveMLIR: unexpected dependency ${item} (${type})")
    endif()
  elseif(item MATCHES "libz3")
    # Only LLVMSupport's Z3 solver (used by clang's static analyser) refers to it; never pulled into our link.
  elseif(item MATCHES "^-l(.*)$")
    set_property(GLOBAL APPEND PROPERTY _WW_SYSTEM ${CMAKE_MATCH_1})
  else()
    set_property(GLOBAL APPEND PROPERTY _WW_SYSTEM ${item})
  endif()
endfunction()

set_property(GLOBAL PROPERTY _WW_SEEN "")
set_property(GLOBAL PROPERTY _WW_ARCHIVES "")
set_property(GLOBAL PROPERTY _WW_SYSTEM "")
foreach(lib IN LISTS WW_MLIR_LIBS)
  _ww_visit(${lib})
endforeach()
get_property(_ww_archives GLOBAL PROPERTY _WW_ARCHIVES)
get_property(_ww_system GLOBAL PROPERTY _WW_SYSTEM)
list(REVERSE _ww_archives)
list(REMOVE_DUPLICATES _ww_system)
list(LENGTH _ww_archives _ww_count)
message(STATUS "warpweave: ${_ww_count} static MLIR/LLVM archives; system libraries: ${_ww_system}")

add_library(ww_mlir_static INTERFACE)
target_include_directories(ww_mlir_static SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_link_libraries(ww_mlir_static INTERFACE ${_ww_archives} ${_ww_system})

function(ww_self_contained_link target)
  target_link_options(${target} PRIVATE
    -static-libstdc++ -static-libgcc
    -Wl,--exclude-libs,ALL  # LLVM's symbols stay private: no clash with another LLVM in the same process
    -Wl,--gc-sections -Wl,--as-needed)
endfunction()

# For the Python extension: LLVM/MLIR inside and private, the C++ runtime shared (the process already has one:
# PyTorch loads libstdc++, and libprotobuf needs it).
function(ww_private_llvm_link target)
  target_link_options(${target} PRIVATE
    -Wl,--exclude-libs,ALL
    -Wl,--gc-sections -Wl,--as-needed)
endfunction()
