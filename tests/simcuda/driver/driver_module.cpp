// Modules, functions and libraries. An image (PTX, cubin or fatbin; driver_image.cpp) is read for
// the kernels and globals it declares: cuModuleGetFunction finds a kernel by its mangled name
// (CUDA_ERROR_NOT_FOUND when the image has none of that name), and the CUfunction carries that
// name into launches, callbacks (symbolName) and kernel activity records. Device globals get
// device address space of their declared size (cuModuleGetGlobal_v2).
//
// Libraries (cuLibrary*, context-independent loading since CUDA 12) hold one module made at load
// time; a CUkernel is a library's kernel, cuKernelGetFunction its CUfunction in the current
// context (the same one in every context here: device work is per device, not per context).
#include <stdio.h>
#include <string.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <vector>

#include "driver_image.h"
#include "driver_internal.h"

namespace simcuda::driver {
namespace {

constexpr uint32_t kFunctionMagic = 0x46554e43;  // "FUNC"
constexpr uint32_t kModuleMagic = 0x4d4f444c;    // "MODL"
constexpr uint32_t kLibraryMagic = 0x4c494252;   // "LIBR"
constexpr uint32_t kKernelMagic = 0x4b524e4c;    // "KRNL"
constexpr int kDefaultDynamicShared = 48 * 1024;
constexpr int kMaxDynamicShared = 227 * 1024;

struct Global {
  std::string name;
  size_t size;
  CUdeviceptr ptr;
};

struct Module {
  uint32_t magic = kModuleMagic;
  std::atomic<bool> live{true};
  ImageKind kind = ImageKind::kInvalid;
  std::vector<Function*> functions;
  std::vector<Global> globals;
};

struct Library;
struct Kernel {
  uint32_t magic = kKernelMagic;
  Library* library;
  Function* function;
};

struct Library {
  uint32_t magic = kLibraryMagic;
  std::atomic<bool> live{true};
  Module* module;
  std::vector<Kernel*> kernels;
};

// Modules, functions, libraries and kernels are never freed, so a stale handle stays readable;
// unloading clears `live`. Handles are checked without a lock (every launch checks its function).

CUresult load(const void* image, size_t size, Module** out) {
  ImageSymbols symbols;
  ImageKind kind = parse_image(image, size, &symbols);
  if (kind == ImageKind::kInvalid) return CUDA_ERROR_INVALID_IMAGE;
  auto* m = new Module;
  m->kind = kind;
  for (const std::string& k : symbols.kernels) {
    auto* f = new Function{kFunctionMagic, intern(k), m, kDefaultDynamicShared, -1, {0, 0, 0}, 0, 0};
    m->functions.push_back(f);
  }
  for (const ImageGlobal& g : symbols.globals) {
    void* p = reserve_device_memory(std::max<size_t>(g.size, 1), current_device());
    m->globals.push_back({g.name, g.size, CUdeviceptr(reinterpret_cast<uintptr_t>(p))});
  }
  *out = m;
  return CUDA_SUCCESS;
}

bool read_file(const char* path, std::vector<char>* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  bytes->push_back('\0');  // PTX files need not end in NUL; the parser is told the size anyway
  return true;
}

Module* as_module(CUmodule h) {
  auto* m = reinterpret_cast<Module*>(h);
  return m && m->magic == kModuleMagic && m->live.load(std::memory_order_acquire) ? m : nullptr;
}

Library* as_library(CUlibrary h) {
  auto* l = reinterpret_cast<Library*>(h);
  return l && l->magic == kLibraryMagic && l->live.load(std::memory_order_acquire) ? l : nullptr;
}

Kernel* as_kernel(CUkernel h) {
  auto* k = reinterpret_cast<Kernel*>(h);
  if (!k || k->magic != kKernelMagic) return nullptr;
  return k->library->live.load(std::memory_order_acquire) ? k : nullptr;
}

Function* find_function(Module* m, const char* name) {
  for (Function* f : m->functions)
    if (strcmp(f->name, name) == 0) return f;
  return nullptr;
}

void unload(Module* m) {
  m->live.store(false, std::memory_order_release);
  for (const Global& g : m->globals) unregister_memory(reinterpret_cast<void*>(uintptr_t(g.ptr)), SIM_MEM_DEVICE);
}

CUresult load_library(const void* image, size_t size, CUlibrary* out) {
  Module* m = nullptr;
  CUresult r = load(image, size, &m);
  if (r != CUDA_SUCCESS) return r;
  auto* lib = new Library;
  lib->module = m;
  for (Function* f : m->functions) lib->kernels.push_back(new Kernel{kKernelMagic, lib, f});
  *out = reinterpret_cast<CUlibrary>(lib);
  return CUDA_SUCCESS;
}

}  // namespace

const Function* as_function(CUfunction h) {
  if (!h) return nullptr;
  auto* f = reinterpret_cast<Function*>(h);
  if (f->magic == kKernelMagic) {  // a CUkernel passed where a CUfunction goes
    Kernel* k = as_kernel(reinterpret_cast<CUkernel>(h));
    return k ? k->function : nullptr;
  }
  if (f->magic != kFunctionMagic) return nullptr;
  return static_cast<Module*>(f->module)->live.load(std::memory_order_acquire) ? f : nullptr;
}

}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

namespace {

CUresult get_attribute(int* value, CUfunction_attribute attrib, const Function* f) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = f->max_dynamic_shared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = f->preferred_carveout; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *value = f->required_cluster[0]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *value = f->required_cluster[1]; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *value = f->required_cluster[2]; break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *value = f->non_portable_cluster; break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *value = f->cluster_scheduling; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult set_attribute(Function* f, CUfunction_attribute attrib, int value) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kMaxDynamicShared) return CUDA_ERROR_INVALID_VALUE;
      f->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      f->preferred_carveout = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: f->required_cluster[0] = value; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: f->required_cluster[1] = value; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: f->required_cluster[2] = value; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: f->non_portable_cluster = value ? 1 : 0; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: f->cluster_scheduling = value; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // the read-only attributes
  }
}

}  // namespace

extern "C" {

// ---- modules -------------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  cuModuleLoad_params params{module, fname};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleLoad, "cuModuleLoad", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!module || !fname) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  std::vector<char> bytes;
                  if (!read_file(fname, &bytes)) return CUDA_ERROR_FILE_NOT_FOUND;
                  Module* m = nullptr;
                  CUresult r = load(bytes.data(), bytes.size() - 1, &m);
                  if (r == CUDA_SUCCESS) *module = reinterpret_cast<CUmodule>(m);
                  return r;
                });
}

SIMCUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  cuModuleLoadData_params params{module, image};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, "cuModuleLoadData", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  Module* m = nullptr;
                  CUresult r = load(image, 0, &m);
                  if (r == CUDA_SUCCESS) *module = reinterpret_cast<CUmodule>(m);
                  return r;
                });
}

SIMCUDA_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int num_options,
                                           CUjit_option* options, void** option_values) {
  cuModuleLoadDataEx_params params{module, image, num_options, options, option_values};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx, "cuModuleLoadDataEx", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
                  if (num_options && (!options || !option_values)) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  Module* m = nullptr;
                  CUresult r = load(image, 0, &m);
                  if (r != CUDA_SUCCESS) return r;
                  // JIT options are accepted; the outputs a caller may read say nothing was logged.
                  for (unsigned i = 0; i < num_options; ++i) {
                    if ((options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) &&
                        option_values[i])
                      static_cast<char*>(option_values[i])[0] = '\0';
                    if (options[i] == CU_JIT_WALL_TIME) {
                      float zero = 0.0f;
                      memcpy(&option_values[i], &zero, sizeof zero);
                    }
                  }
                  *module = reinterpret_cast<CUmodule>(m);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fat_cubin) {
  cuModuleLoadFatBinary_params params{module, fat_cubin};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary, "cuModuleLoadFatBinary", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!module || !fat_cubin) return CUDA_ERROR_INVALID_VALUE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  Module* m = nullptr;
                  CUresult r = load(fat_cubin, 0, &m);
                  if (r == CUDA_SUCCESS) *module = reinterpret_cast<CUmodule>(m);
                  return r;
                });
}

SIMCUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  cuModuleUnload_params params{hmod};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, "cuModuleUnload", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  Module* m = as_module(hmod);
                  if (!m) return CUDA_ERROR_INVALID_HANDLE;
                  unload(m);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  cuModuleGetFunction_params params{hfunc, hmod, name};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, "cuModuleGetFunction", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
                  Module* m = as_module(hmod);
                  if (!m) return CUDA_ERROR_INVALID_HANDLE;
                  Function* f = find_function(m, name);
                  if (!f) return CUDA_ERROR_NOT_FOUND;
                  *hfunc = reinterpret_cast<CUfunction>(f);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule hmod) {
  cuModuleGetFunctionCount_params params{count, hmod};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunctionCount, "cuModuleGetFunctionCount", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!count) return CUDA_ERROR_INVALID_VALUE;
                  Module* m = as_module(hmod);
                  if (!m) return CUDA_ERROR_INVALID_HANDLE;
                  *count = unsigned(m->functions.size());
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                          const char* name) {  // cuModuleGetGlobal_v2
  cuModuleGetGlobal_v2_params params{dptr, bytes, hmod, name};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuModuleGetGlobal_v2, "cuModuleGetGlobal_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!name) return CUDA_ERROR_INVALID_VALUE;
                  Module* m = as_module(hmod);
                  if (!m) return CUDA_ERROR_INVALID_HANDLE;
                  for (const Global& g : m->globals)
                    if (g.name == name) {
                      if (dptr) *dptr = g.ptr;
                      if (bytes) *bytes = g.size;
                      return CUDA_SUCCESS;
                    }
                  return CUDA_ERROR_NOT_FOUND;
                });
}

// ---- functions -----------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  cuFuncGetAttribute_params params{pi, attrib, hfunc};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute, "cuFuncGetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return get_attribute(pi, attrib, as_function(hfunc)); });
}

SIMCUDA_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  cuFuncSetAttribute_params params{hfunc, attrib, value};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute, "cuFuncSetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) {
                  return set_attribute(const_cast<Function*>(as_function(hfunc)), attrib, value);
                });
}

SIMCUDA_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  cuFuncSetCacheConfig_params params{hfunc, config};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuFuncSetCacheConfig, "cuFuncSetCacheConfig", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return as_function(hfunc) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; });
}

SIMCUDA_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  cuFuncGetName_params params{name, hfunc};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuFuncGetName, "cuFuncGetName", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!name) return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(hfunc);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  *name = f->name;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  cuFuncGetModule_params params{hmod, hfunc};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuFuncGetModule, "cuFuncGetModule", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!hmod) return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(hfunc);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  *hmod = reinterpret_cast<CUmodule>(f->module);
                  return CUDA_SUCCESS;
                });
}

// ---- libraries -----------------------------------------------------------------------------------
SIMCUDA_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jit_options,
                                          void** jit_values, unsigned int num_jit, CUlibraryOption* lib_options,
                                          void** lib_values, unsigned int num_lib) {
  cuLibraryLoadData_params params{library, code, jit_options, jit_values, num_jit, lib_options, lib_values, num_lib};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData, "cuLibraryLoadData", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
                  return load_library(code, 0, library);  // needs no context
                });
}

SIMCUDA_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* file, CUjit_option* jit_options,
                                              void** jit_values, unsigned int num_jit, CUlibraryOption* lib_options,
                                              void** lib_values, unsigned int num_lib) {
  cuLibraryLoadFromFile_params params{library, file, jit_options, jit_values, num_jit, lib_options, lib_values, num_lib};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile, "cuLibraryLoadFromFile", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!library || !file) return CUDA_ERROR_INVALID_VALUE;
                  std::vector<char> bytes;
                  if (!read_file(file, &bytes)) return CUDA_ERROR_FILE_NOT_FOUND;
                  return load_library(bytes.data(), bytes.size() - 1, library);
                });
}

SIMCUDA_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  cuLibraryUnload_params params{library};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload, "cuLibraryUnload", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  Library* l = as_library(library);
                  if (!l) return CUDA_ERROR_INVALID_HANDLE;
                  unload(l->module);
                  l->live.store(false, std::memory_order_release);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuLibraryGetKernel(CUkernel* kernel, CUlibrary library, const char* name) {
  cuLibraryGetKernel_params params{kernel, library, name};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel, "cuLibraryGetKernel", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!kernel || !name) return CUDA_ERROR_INVALID_VALUE;
                  Library* l = as_library(library);
                  if (!l) return CUDA_ERROR_INVALID_HANDLE;
                  for (Kernel* k : l->kernels)
                    if (strcmp(k->function->name, name) == 0) {
                      *kernel = reinterpret_cast<CUkernel>(k);
                      return CUDA_SUCCESS;
                    }
                  return CUDA_ERROR_NOT_FOUND;
                });
}

SIMCUDA_EXPORT CUresult cuLibraryGetModule(CUmodule* module, CUlibrary library) {
  cuLibraryGetModule_params params{module, library};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule, "cuLibraryGetModule", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!module) return CUDA_ERROR_INVALID_VALUE;
                  Library* l = as_library(library);
                  if (!l) return CUDA_ERROR_INVALID_HANDLE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  *module = reinterpret_cast<CUmodule>(l->module);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuKernelGetFunction(CUfunction* func, CUkernel kernel) {
  cuKernelGetFunction_params params{func, kernel};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction, "cuKernelGetFunction", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!func) return CUDA_ERROR_INVALID_VALUE;
                  Kernel* k = as_kernel(kernel);
                  if (!k) return CUDA_ERROR_INVALID_HANDLE;
                  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
                  *func = reinterpret_cast<CUfunction>(k->function);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  cuKernelGetName_params params{name, kernel};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuKernelGetName, "cuKernelGetName", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!name) return CUDA_ERROR_INVALID_VALUE;
                  Kernel* k = as_kernel(kernel);
                  if (!k) return CUDA_ERROR_INVALID_HANDLE;
                  *name = k->function->name;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  cuKernelGetAttribute_params params{pi, attrib, kernel, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, "cuKernelGetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  Kernel* k = as_kernel(kernel);
                  return get_attribute(pi, attrib, k ? k->function : nullptr);
                });
}

SIMCUDA_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  cuKernelSetAttribute_params params{attrib, val, kernel, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuKernelSetAttribute, "cuKernelSetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  Kernel* k = as_kernel(kernel);
                  return set_attribute(k ? k->function : nullptr, attrib, val);
                });
}

}  // extern "C"
