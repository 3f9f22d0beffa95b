//===- DynamicLibs.cpp - cuBLASLt and cuDNN, loaded when first used -------===//
#include "DynamicLibs.h"

#include <dlfcn.h>

#include <vector>

namespace mp::rt::cuda {

namespace {

#define MP_STR2(x) #x
#define MP_STR(x) MP_STR2(x)

/// dlopen of the first name that loads; the errors of all otherwise.
void *openFirst(const std::vector<std::string> &names, std::string &error) {
  std::string errors;
  for (const std::string &n : names) {
    if (n.empty())
      continue;
    if (void *h = dlopen(n.c_str(), RTLD_LAZY | RTLD_LOCAL))
      return h;
    const char *e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e ? e : n);
  }
  error = "cannot load " + names.front() + " (" + errors + ")";
  return nullptr;
}

template <typename Api>
void resolve(Api &api, void *handle, const char *name, void *&slot) {
  if (!api.error.empty())
    return;
  slot = dlsym(handle, name);
  if (!slot)
    api.error = std::string("the loaded library has no ") + name;
}

/// The function table of the first library of `names` that loads, with
/// every function resolveAll(api, handle) resolves; loaded, or the error.
template <typename Api, typename ResolveAll>
Api loadApi(const std::vector<std::string> &names, ResolveAll resolveAll) {
  Api api;
  void *handle = openFirst(names, api.error);
  if (!handle)
    return api;
  resolveAll(api, handle);
  api.loaded = api.error.empty();
  return api;
}

#define MP_RESOLVE(name)                                                       \
  resolve(api, handle, #name, reinterpret_cast<void *&>(api.name));

} // namespace

const CublasLtApi &cublasLt() {
  static const CublasLtApi api = loadApi<CublasLtApi>(
      {"libcublasLt.so." MP_STR(CUBLAS_VER_MAJOR), "libcublasLt.so",
#ifdef MP_CUDA_LIBRARY_DIR
       MP_CUDA_LIBRARY_DIR "/libcublasLt.so." MP_STR(CUBLAS_VER_MAJOR)
#else
       ""
#endif
      },
      [](CublasLtApi &api, void *handle) { MP_CUBLASLT_FUNCTIONS(MP_RESOLVE) });
  return api;
}

const CudnnApi &cudnn() {
  static const CudnnApi api = loadApi<CudnnApi>(
      {"libcudnn.so." MP_STR(CUDNN_MAJOR), "libcudnn.so",
#ifdef MP_CUDNN_LIBRARY_PATH
       MP_CUDNN_LIBRARY_PATH
#else
       ""
#endif
      },
      [](CudnnApi &api, void *handle) { MP_CUDNN_FUNCTIONS(MP_RESOLVE) });
  return api;
}

#if MP_HAVE_NCCL
const NcclApi &nccl() {
  static const NcclApi api = loadApi<NcclApi>(
      {"libnccl.so." MP_STR(NCCL_MAJOR), "libnccl.so",
#ifdef MP_CUDA_LIBRARY_DIR
       MP_CUDA_LIBRARY_DIR "/libnccl.so." MP_STR(NCCL_MAJOR)
#else
       ""
#endif
      },
      [](NcclApi &api, void *handle) { MP_NCCL_FUNCTIONS(MP_RESOLVE) });
  return api;
}
#endif

#undef MP_RESOLVE

} // namespace mp::rt::cuda
