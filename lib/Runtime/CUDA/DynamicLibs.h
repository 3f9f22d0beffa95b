//===- DynamicLibs.h - cuBLASLt and cuDNN, loaded when first used -*- C++
//-*-===//
//
// The CUDA backend does not link cuBLASLt and cuDNN: it opens them with
// dlopen when the first CudaExecutor is created. Loading libcublasLt (half a
// gigabyte) costs every process ~0.1 s, which every mp-run invocation on
// the CPU would pay; and an mp-run built with the CUDA backend must start
// on machines without those libraries. The CUDA runtime is linked
// statically (it loads the driver itself, when first used).
//
// nccl() likewise loads NCCL, only for data-parallel plans of several ranks.
//
// cublasLt() / cudnn() return the function tables (every function the
// backend calls, under its own name): lt.cublasLtMatmul(...). The first call
// loads the library; `error` says why a table could not be loaded
// (loaded = false). Private to lib/Runtime/CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_DYNAMICLIBS_H
#define MP_LIB_RUNTIME_CUDA_DYNAMICLIBS_H

#include <cublasLt.h>
#include <cudnn.h>
// NCCL (data-parallel steps on several GPUs): the CUDA toolkits of NVIDIA's
// images ship it; without its header the backend runs data-parallel plans
// as one rank only.
#if __has_include(<nccl.h>)
#include <nccl.h>
#define MP_HAVE_NCCL 1
#else
#define MP_HAVE_NCCL 0
#endif

#include <string>

namespace mp::rt::cuda {

#define MP_CUBLASLT_FUNCTIONS(X)                                               \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

#define MP_CUDNN_FUNCTIONS(X)                                                  \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnSetTensorNdDescriptorEx)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnSetFilterNdDescriptor)                                                \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnSetConvolutionNdDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnDeriveBNTensorDescriptor)                                             \
  X(cudnnBatchNormalizationForwardInference)                                   \
  X(cudnnBatchNormalizationForwardTraining)                                    \
  X(cudnnBatchNormalizationBackward)

#define MP_NCCL_FUNCTIONS(X)                                                   \
  X(ncclGetVersion)                                                            \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclGetErrorString)                                                        \
  X(ncclAllReduce)

#define MP_DECLARE_FN(name) decltype(&::name) name = nullptr;

struct CublasLtApi {
  bool loaded = false;
  std::string error;
  MP_CUBLASLT_FUNCTIONS(MP_DECLARE_FN)
};

struct CudnnApi {
  bool loaded = false;
  std::string error;
  MP_CUDNN_FUNCTIONS(MP_DECLARE_FN)
};

#if MP_HAVE_NCCL
struct NcclApi {
  bool loaded = false;
  std::string error;
  MP_NCCL_FUNCTIONS(MP_DECLARE_FN)
};
#endif

#undef MP_DECLARE_FN

/// The tables, loaded on first use (thread-safe).
const CublasLtApi &cublasLt();
const CudnnApi &cudnn();
#if MP_HAVE_NCCL
const NcclApi &nccl();
#endif

} // namespace mp::rt::cuda

#endif // MP_LIB_RUNTIME_CUDA_DYNAMICLIBS_H
