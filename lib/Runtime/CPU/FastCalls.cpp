//===- FastCalls.cpp - which calls run on oneDNN --------------------------===//
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#ifdef MP_RUNTIME_HAVE_ONEDNN
#include "OneDNN/OneDnn.h"
#endif

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(MP_RUNTIME_HAVE_OPENBLAS)
#include <cblas.h>
#endif

#include <atomic>
#include <string_view>
#include <utility>

namespace mp::rt::cpu {

int cpuThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void configureCpuThreads(CpuKernels kernels, int threads) {
#ifdef _OPENMP
  if (threads >= 1)
    omp_set_num_threads(threads);
#endif
#if defined(MP_RUNTIME_HAVE_OPENBLAS)
  // OpenBLAS's setting is the process's: set it only when it changes.
  static const int blasDefault = openblas_get_num_threads();
  static std::atomic<int> blasThreads{blasDefault};
  int want = kernels == CpuKernels::Fast && haveFastKernels() ? 1
             : threads >= 1                                   ? threads
                                                              : blasDefault;
  if (blasThreads.exchange(want) != want)
    openblas_set_num_threads(want);
#else
  (void)kernels;
#endif
}

#ifdef MP_RUNTIME_HAVE_ONEDNN

namespace {

/// A fused program on the own kernel with vectorised exp, sigmoid and tanh
/// (the reference calls libm per element), bound to its buffers once.
class FusedProgramCall : public PreparedCall {
public:
  explicit FusedProgramCall(FusedElementwiseKernel kernel)
      : kernel_(std::move(kernel)) {}
  size_t scratchBytes() const override { return 0; }
  Status run(void *) override {
    kernel_.run();
    return Status::ok();
  }
  const std::string &implementation() const override { return name_; }

private:
  FusedElementwiseKernel kernel_;
  std::string name_ = "own:fused f32 program, vectorised exp/sigmoid/tanh";
};

FastCallChoice prepareFusedElementwise(const PlanCall &call,
                                       const std::vector<TensorView> &operands,
                                       const std::vector<TensorView> &results,
                                       const std::vector<bool> &,
                                       const FilterSource *) {
  Result<FusedProgram> program = fusedProgramOf(call, operands.size());
  if (!program || results.size() != 1)
    return {nullptr, "the reference kernel reports the call's error"};
  // A chain of oneDNN's functions runs as one binary primitive with
  // post-ops (jit, every core); any other program on the own kernel.
  FastCallChoice chain =
      onednn::prepareFusedChain(*program, operands, results[0]);
  if (chain.call)
    return chain;
  Result<FusedElementwiseKernel> kernel = FusedElementwiseKernel::bind(
      *program, operands, results[0], /*vectorMath=*/true);
  if (!kernel)
    return {nullptr, "the reference kernel reports the call's error"};
  return {std::make_unique<FusedProgramCall>(std::move(*kernel)), ""};
}

} // namespace

FastCallChoice prepareFastCall(const PlanCall &call,
                               const std::vector<TensorView> &operands,
                               const std::vector<TensorView> &results,
                               const std::vector<bool> &constant,
                               const FilterSource *filter) {
  static const std::pair<std::string_view, onednn::PrepareFn> kFastCalls[] = {
      {"cublaslt.matmul", onednn::prepareMatmul},
      {"cudnn.conv_fwd", onednn::prepareConv},
      {"kernel.elementwise", onednn::prepareElementwise},
      {"cudnn.conv_bwd_data", onednn::prepareConvBackwardData},
      {"cudnn.conv_bwd_filter", onednn::prepareConvBackwardFilter},
      {"cudnn.batch_norm_inference", onednn::prepareBatchNormInference},
      {"cudnn.batch_norm_training", onednn::prepareBatchNormTraining},
      {"cudnn.batch_norm_bwd", onednn::prepareBatchNormBackward},
      {"cudnn.rnn", onednn::prepareRnn},
      {"cudnn.softmax", onednn::prepareSoftmax},
      {"cudnn.pool", onednn::preparePool},
      {"kernel.layer_norm", onednn::prepareLayerNorm},
      {"kernel.rms_norm", onednn::prepareRmsNorm},
      {"kernel.group_norm", onednn::prepareGroupNorm},
      {"kernel.attention", onednn::prepareAttention},
      {"cudnn.lrn", onednn::prepareLrn},
      {"kernel.fused_elementwise", prepareFusedElementwise}};
  auto usesF16 = [&] {
    for (const std::vector<TensorView> *buffers : {&operands, &results})
      for (const TensorView &t : *buffers)
        if (t.dtype == DType::F16)
          return true;
    return false;
  };
  for (const auto &[kind, prepare] : kFastCalls) {
    if (call.kind != kind)
      continue;
    FastCallChoice choice = prepare(call, operands, results, constant, filter);
    // No f16 kernel for this one (a primitive or an attribute the CPU's f16
    // kernels lack): through f32 copies, as on CPUs without f16 arithmetic.
    if (!choice.call && onednn::f16IsNative() && usesF16()) {
      onednn::ScopedF16Widening widened;
      FastCallChoice second =
          prepare(call, operands, results, constant, filter);
      if (second.call)
        return second;
    }
    return choice;
  }
  return {nullptr, "no oneDNN primitive for " + call.kind + " yet"};
}

bool haveFastKernels() { return true; }
bool fastKernelsComputeF16() { return onednn::f16IsNative(); }
size_t preparedConstantBytes() { return onednn::preparedConstantBytes(); }

std::string fastKernelIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::sse41:
    return "sse41";
  case dnnl::cpu_isa::avx:
    return "avx";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_fp16:
    return "avx512_core_fp16";
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  case dnnl::cpu_isa::avx512_core_amx_fp16:
    return "avx512_core_amx_fp16";
  case dnnl::cpu_isa::avx2_vnni_2:
    return "avx2_vnni_2";
  default:
    return "other";
  }
}

#else // no oneDNN: the reference kernels run everything.

FastCallChoice prepareFastCall(const PlanCall &,
                               const std::vector<TensorView> &,
                               const std::vector<TensorView> &,
                               const std::vector<bool> &,
                               const FilterSource *) {
  return {nullptr, "built without oneDNN"};
}

bool haveFastKernels() { return false; }
bool fastKernelsComputeF16() { return false; }
size_t preparedConstantBytes() { return 0; }
std::string fastKernelIsa() { return "none"; }

#endif

} // namespace mp::rt::cpu
