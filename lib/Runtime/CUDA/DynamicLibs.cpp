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

} // namespace

const CublasLtApi &cublasLt() {
  static const CublasLtApi api = [] {
    CublasLtApi a;
    void *h = openFirst(
        {"libcublasLt.so." MP_STR(CUBLAS_VER_MAJOR), "libcublasLt.so",
#ifdef MP_CUDA_LIBRARY_DIR
         MP_CUDA_LIBRARY_DIR "/libcublasLt.so." MP_STR(CUBLAS_VER_MAJOR)
#else
         ""
#endif
        },
        a.error);
    if (!h)
      return a;
#define MP_RESOLVE(name)                                                       \
  resolve(a, h, #name, reinterpret_cast<void *&>(a.name));
    MP_CUBLASLT_FUNCTIONS(MP_RESOLVE)
#undef MP_RESOLVE
    a.loaded = a.error.empty();
    return a;
  }();
  return api;
}

const CudnnApi &cudnn() {
  static const CudnnApi api = [] {
    CudnnApi a;
    void *h = openFirst({"libcudnn.so." MP_STR(CUDNN_MAJOR), "libcudnn.so",
#ifdef MP_CUDNN_LIBRARY_PATH
                         MP_CUDNN_LIBRARY_PATH
#else
                         ""
#endif
                        },
                        a.error);
    if (!h)
      return a;
#define MP_RESOLVE(name)                                                       \
  resolve(a, h, #name, reinterpret_cast<void *&>(a.name));
    MP_CUDNN_FUNCTIONS(MP_RESOLVE)
#undef MP_RESOLVE
    a.loaded = a.error.empty();
    return a;
  }();
  return api;
}

} // namespace mp::rt::cuda
