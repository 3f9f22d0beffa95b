//===- FastCalls.cpp - which calls run on oneDNN --------------------------===//
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/CPU/VectorMath.h"

#ifdef MP_RUNTIME_HAVE_ONEDNN
#include "OneDNN/OneDnn.h"
#endif
#include "KernelUtil.h"
#include "Parallel.h"

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

/// kernel.scaled_softmax on the own kernel with the vectorised exp
/// (VectorMath.h), rows over the threads: each row widened to f32, scaled,
/// the mask row added, softmaxInPlace, rounded once into y.
class ScaledSoftmaxCall : public PreparedCall {
public:
  ScaledSoftmaxCall(const TensorView &x, const TensorView *mask,
                    const TensorView &y, float scale)
      : x_(x), y_(y), scale_(scale) {
    if (mask) {
      mask_ = *mask;
      maskStrides_ = broadcastStridesOf(mask->shape, x.shape);
    }
  }
  size_t scratchBytes() const override { return 0; }
  const std::string &implementation() const override { return name_; }

  Status run(void *) override {
    const int64_t len = x_.shape.back();
    const int64_t rows = len ? x_.numElements() / len : 0;
    const size_t rank = x_.shape.size();
    const size_t xBytes = byteSize(x_.dtype), maskBytes = byteSize(mask_.dtype);
    detail::parallelItems(rows, len * 8, [&](int64_t r) {
      thread_local std::vector<float> row, maskRow;
      row.resize(static_cast<size_t>(len));
      detail::toF32(x_.dtype,
                    static_cast<const char *>(x_.data) + r * len * xBytes,
                    row.data(), len);
      for (float &v : row)
        v *= scale_;
      if (!maskStrides_.empty()) {
        const int64_t offset = broadcastRowOffset(x_.shape, maskStrides_, r);
        const int64_t step = maskStrides_[rank - 1];
        const char *base = static_cast<const char *>(mask_.data);
        if (step == 1) {
          maskRow.resize(static_cast<size_t>(len));
          detail::toF32(mask_.dtype, base + offset * maskBytes, maskRow.data(),
                        len);
          for (int64_t j = 0; j < len; ++j)
            row[j] += maskRow[j];
        } else {
          float m = 0;
          detail::toF32(mask_.dtype, base + offset * maskBytes, &m, 1);
          for (float &v : row)
            v += m; // step 0: one mask value for the whole row
        }
      }
      softmaxInPlace(row.data(), len);
      detail::fromF32(row.data(), y_.dtype,
                      static_cast<char *>(y_.data) + r * len * xBytes, len);
    });
    return Status::ok();
  }

private:
  TensorView x_, y_, mask_;
  std::vector<int64_t> maskStrides_;
  float scale_;
  std::string name_ = "own:rows over the threads, vectorised exp";
};

FastCallChoice prepareScaledSoftmax(const PlanCall &call,
                                    const std::vector<TensorView> &operands,
                                    const std::vector<TensorView> &results,
                                    const std::vector<bool> &,
                                    const FilterSource *) {
  std::array<const TensorView *, 2> in;
  std::array<const TensorView *, 1> out;
  Result<double> scale = floatAttr(call, "scale", 1.0);
  if (!bindCallBuffers(call, operands, {{{"x", false}, {"mask", true}}}, in,
                       results, {{{"y", false}}}, out) ||
      !scale || !checkScaledSoftmax(*in[0], in[1], *out[0]))
    return {nullptr, "the reference kernel reports the call's error"};
  if (in[0]->dtype == DType::F64)
    return {nullptr, "f64 (the vectorised exp is f32)"};
  // y in place of x reads each row before writing it: fine; a mask row is
  // read whole first too.
  return {std::make_unique<ScaledSoftmaxCall>(*in[0], in[1], *out[0],
                                              static_cast<float>(*scale)),
          ""};
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
      {"kernel.scaled_softmax", prepareScaledSoftmax},
      {"kernel.attention", onednn::prepareAttention},
      {"cudnn.lrn", onednn::prepareLrn},
      {"kernel.fused_elementwise", prepareFusedElementwise}};
  // Whether a buffer is f16 or bf16 that goes to the primitives as it is.
  auto usesNative16Bit = [&] {
    for (const std::vector<TensorView> *buffers : {&operands, &results})
      for (const TensorView &t : *buffers)
        if (onednn::is16BitFloat(t.dtype) && onednn::narrowIsNative(t.dtype))
          return true;
    return false;
  };
  // oneDNN's batch norm sees one rank's batch only.
  if (call.attr("sync_ranks"))
    return {nullptr, "statistics over the ranks' batches (sync_ranks)"};
  for (const auto &[kind, prepare] : kFastCalls) {
    if (call.kind != kind)
      continue;
    FastCallChoice choice = prepare(call, operands, results, constant, filter);
    // No 16-bit kernel for this one (a primitive or an attribute the CPU's
    // f16 or bf16 kernels lack, or bf16 on CPUs without AVX-512): through
    // f32 copies, as f16 on CPUs without f16 arithmetic.
    if (!choice.call && usesNative16Bit()) {
      onednn::ScopedWidening widened;
      FastCallChoice second =
          prepare(call, operands, results, constant, filter);
      if (second.call)
        return second;
    }
    return choice;
  }
  // Collectives are the communicator's business (MPI), not a primitive's.
  if (call.kind.rfind("comm.", 0) == 0)
    return {nullptr, "a collective over the ranks (Communicator.h)"};
  return {nullptr, "no oneDNN primitive for " + call.kind + " yet"};
}

bool haveFastKernels() { return true; }
bool fastKernelsComputeF16() { return onednn::narrowIsNative(DType::F16); }
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
