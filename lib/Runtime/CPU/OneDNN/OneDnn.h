//===- OneDnn.h - the CPU backend's oneDNN primitives -----------*- C++ -*-===//
//
// Shared by the oneDNN-backed calls (FastCalls.h): the engine, memory
// descriptors for the runtime's tensors, and a prepared call that runs one
// primitive (after reordering operands the library keeps in its own layout).
// Only built when oneDNN is found (MP_RUNTIME_HAVE_ONEDNN).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_ONEDNN_ONEDNN_H
#define MP_RUNTIME_CPU_ONEDNN_ONEDNN_H

#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/FusedProgram.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace mp::rt::cpu::onednn {

/// The CPU engine (one for the process; oneDNN engines are thread-safe).
const dnnl::engine &engine();

/// Whether buffers of the 16-bit dtype t (F16, BF16) go to the primitives
/// as they are on this thread, outside a ScopedWidening: bf16 always (oneDNN
/// computes it in f32 where the CPU has no bf16 instructions), f16 on CPUs
/// with oneDNN's f16 kernels (AVX512-FP16: Sapphire Rapids and later;
/// AVX2-VNNI-2), which accumulate in f32 and round once. Otherwise the
/// buffers are widened into f32 copies (exact) and results rounded once into
/// them (Binding::widened).
bool narrowIsNative(DType t);
/// Whether the CPU's 16-bit dot products of dtype t beat its f32 FMAs, so
/// that compute-bound convolutions and matmuls run faster on 16-bit
/// operands than on f32 copies of them: bf16 with AMX, or on AMD's AVX512-BF16
/// CPUs (Zen 4 and later: oneDNN's bf16 matmul 2.3x the speed of its f32
/// one there, docs/benchmarks.md); f16 with AMX-FP16 (Granite Rapids and
/// later). On Intel's AVX512-BF16 CPUs without AMX oneDNN's bf16 kernels are
/// slower than its f32 ones (measured: ResNet-50's convolutions 1.6x, a
/// BERT-sized 64x128x512 matmul 1.9x the f32 time), as are f16 kernels
/// that widen inside. The environment variable MP_CPU_16BIT_PRODUCTS=native
/// or =f32 overrides the choice for the calls prepared while it is set (to
/// compare both paths on one CPU; tests run both on any CPU).
bool fastDotProducts(DType t);
/// While alive, this thread prepares calls with f16 and bf16 widened to f32
/// even where they are native: compute-bound calls on CPUs without fast
/// dot products (fastDotProducts), and prepareFastCall's second try for a
/// call that oneDNN has no 16-bit implementation of.
class ScopedWidening {
public:
  ScopedWidening();
  ~ScopedWidening();
  ScopedWidening(const ScopedWidening &) = delete;
  ScopedWidening &operator=(const ScopedWidening &) = delete;
};
/// Whether t is F16 or BF16.
inline bool is16BitFloat(DType t) {
  return t == DType::F16 || t == DType::BF16;
}
/// Whether buffers of t go to the primitives as f32 copies on this thread.
inline bool widenedOnThisThread(DType t) {
  return is16BitFloat(t) && !narrowIsNative(t);
}
/// The data type a primitive computes on for a runtime dtype: f32 as it is;
/// f16 and bf16 as they are where native (narrowIsNative; f32 accumulation),
/// else as f32 (Binding::widened). None for others.
std::optional<dnnl::memory::data_type> computeTypeOf(DType t);

/// A row-major descriptor of `dims` of dtype t.
dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims,
                             dnnl::memory::data_type t);

/// `d`'s dims and data type in whatever layout the primitive picks
/// (format_tag::any).
dnnl::memory::desc anyLayout(const dnnl::memory::desc &d);

/// Row-major strides of `shape`, in elements.
dnnl::memory::dims rowMajorStrides(const Shape &shape);
/// A tensor [A, C, D...] (NCHW) or [A, D..., C] (NHWC) as oneDNN's logical
/// [A, C, D...] dims with the strides (elements) of its row-major data:
/// activations (A = N) and filters (A = M, C = C/groups) alike.
void channelsFirst(const Shape &shape, Layout layout, dnnl::memory::dims &dims,
                   dnnl::memory::dims &strides);
/// An activation's descriptor in that logical order.
dnnl::memory::desc activationDesc(const TensorView &t, Layout layout,
                                  dnnl::memory::data_type type);

/// A filter w ([M, C/g, K...] or, NHWC, [M, K..., C/g]) as oneDNN's logical
/// [M, C/g, K...] or, grouped, [g, M/g, C/g, K...].
dnnl::memory::desc filterDesc(const TensorView &w, Layout layout,
                              int64_t groups, dnnl::memory::data_type type);

/// A convolution's window as oneDNN takes it: per spatial dim, strides,
/// dilations as gaps (d - 1) and pads, the absent ones filled in.
struct ConvWindow {
  dnnl::memory::dims strides, dilates, padsBegin, padsEnd;
};
ConvWindow convWindowOf(const ConvOptions &o, size_t spatial);
/// A direct forward-inference convolution over `window`, with a bias where
/// `bias` is not null, then o's activation as post-ops, after a residual
/// (a binary add of a tensor laid out as dst) where `residual`; the
/// scratchpad is the caller's.
dnnl::convolution_forward::primitive_desc
convForwardDesc(const dnnl::memory::desc &src,
                const dnnl::memory::desc &weights,
                const dnnl::memory::desc *bias, const dnnl::memory::desc &dst,
                const ConvWindow &window, const ConvOptions &o, bool residual);

/// While alive, oneDNN primitives made on this thread are made for one
/// thread (their kernels' work split and scratchpads): for calls that run
/// them inside a parallel region of their own, one thread each (blocks of a
/// convolution's rows, attention's (batch, head) problems).
class OneThreadPrimitives {
public:
  OneThreadPrimitives();
  ~OneThreadPrimitives();
  OneThreadPrimitives(const OneThreadPrimitives &) = delete;
  OneThreadPrimitives &operator=(const OneThreadPrimitives &) = delete;

private:
  int threads_;
};

/// Attributes with the scratchpad left to the caller (every call's: it is
/// the executor's workspace, PrimitiveCall::run).
dnnl::primitive_attr userScratchpad();

/// The eltwise post-op of an activation (none: no post-op); lo / hi:
/// Activation::Clip's bounds.
dnnl::post_ops postOpsOf(Activation activation, float lo = 0, float hi = 0);
/// Appends that eltwise post-op (nothing for none) to `ops`.
void appendActivation(dnnl::post_ops &ops, Activation activation, float lo = 0,
                      float hi = 0);

/// Whether a primitive writes argument `arg` (DNNL_ARG_DST, the gradients),
/// as opposed to reading it. Batch norm's MEAN and VARIANCE are either: the
/// training forward writes them (Binding::output set by hand).
bool isOutputArg(int arg);

/// A buffer of the call as a primitive's argument: its layout and data.
struct Binding {
  Binding(int arg, dnnl::memory::desc desc, const TensorView &t,
          bool constant = false)
      : arg(arg), desc(std::move(desc)), data(t.data), constant(constant),
        widened(widenedOnThisThread(t.dtype)), storage(t.dtype),
        output(isOutputArg(arg)) {}
  int arg; ///< DNNL_ARG_SRC, ...
  /// What the primitive sees (f32 for a widened buffer; dense).
  dnnl::memory::desc desc;
  void *data;
  /// Never changes while the plan is loaded (a weight): converted and
  /// reordered once, when the call is prepared.
  bool constant;
  /// `data` holds 16-bit values (`storage`: f16 or bf16) in desc's layout:
  /// the primitive reads an f32 copy and writes one that is rounded into it.
  bool widened;
  DType storage;
  /// F16 or BF16: `data` is f32 (a filter's channels-first source,
  /// filterBinding) whose values the plan rounds to that type on the way to
  /// (from) the primitive, which computes on them as f32 (a widened filter):
  /// an operand is rounded into a copy before the run, a result in place
  /// after it. F32: none.
  DType roundedTo = DType::F32;
  /// The primitive writes it (after the run: reordered, rounded into a
  /// widened buffer).
  bool output;
  /// An output written through the scratch after the run even when the
  /// primitive could write it in place: it may share bytes with operands
  /// the primitive reads (a gradient the plan would only write later).
  bool staged = false;
  /// Set (by the constructor below): memory in the primitive's layout,
  /// bound as it is and kept alive by the call: a constant (sharedConstant)
  /// or memory of the call's own (an LSTM's final states no result wants).
  std::shared_ptr<const dnnl::memory> prepared;

  Binding(int arg, std::shared_ptr<const dnnl::memory> prepared)
      : arg(arg), desc(prepared->get_desc()), data(nullptr), constant(false),
        widened(false), storage(DType::F32), output(false),
        prepared(std::move(prepared)) {}
};

/// A constant made from the weight bytes at `source` by `make` (a call's own
/// repacking, e.g. an LSTM's gates into oneDNN's order), in the layout
/// `wanted`: made once per source, `kind` and layout in the process, and
/// shared as PrimitiveCall's reordered weights are (lib/Runtime/WeakCache.h).
std::shared_ptr<const dnnl::memory>
sharedConstant(const void *source, const std::string &kind,
               const dnnl::memory::desc &wanted,
               const std::function<dnnl::memory()> &make);

/// count 16-bit values of `storage` (f16, bf16) -> f32 (exact), and f32 ->
/// `storage` rounded once, on the calling thread.
void widenOnThread(DType storage, const uint16_t *narrow, float *f32,
                   size_t count);
void narrowOnThread(DType storage, const float *f32, uint16_t *narrow,
                    size_t count);
/// A constant binding's memory as `wanted` lays it out (widened to f32
/// where it is): made once per weight and layout in the process, in the memory
/// PrimitiveCall's reordered constants share.
std::shared_ptr<const dnnl::memory>
preparedConstant(const Binding &b, const dnnl::memory::desc &wanted);
/// A convolution's filter (operand, or a backward-filter call's dw) as the
/// call binds it: as the plan holds it (`user`, its descriptor), or, where a
/// FilterSource of the same dims and a dtype oneDNN reorders is given for a
/// channels-last call, that buffer channels first: the reorder into (out
/// of) the primitive's layout then does the plan's cast and transpose.
/// `fromSource` says which.
Binding filterBinding(int arg, const TensorView &filter,
                      const dnnl::memory::desc &user, const ConvOptions &o,
                      const FilterSource *source, bool constant,
                      bool &fromSource);

/// No fast call: the reference kernel runs it, for this reason.
inline FastCallChoice referenceKernel(std::string why) {
  return FastCallChoice{nullptr, std::move(why)};
}

/// `prepare()`'s result, or the reason when oneDNN throws (a combination
/// it has no implementation of on this CPU).
template <typename Prepare> FastCallChoice catchingErrors(Prepare prepare) {
  try {
    return prepare();
  } catch (const dnnl::error &e) {
    return referenceKernel(std::string("oneDNN: ") + e.what());
  }
}

/// A primitive bound to the call's buffers. Operands the primitive wants in
/// another layout (its blocked weights; activations it was given as `any`)
/// are reordered: constant ones once, here; the others before every run (the
/// result after it), through the scratch (the executor's workspace), after
/// the primitive's own scratchpad. Widened 16-bit buffers are read and
/// written through f32 copies there (the implementation's name then ends in
/// ", on f32 copies"). A constant that needs a reorder or an f32 copy gets it
/// once, in memory shared by every call made from the same weight, in any
/// executor of the process (preparedConstantBytes).
class PrimitiveCall final : public PreparedCall {
public:
  /// The call running `pd`'s primitive on `buffers`, or the reference kernel
  /// when oneDNN's best is its own reference code, unless `whyReferenceIsFast`
  /// says why that code is worth taking (then shown after the name: oneDNN's
  /// recurrent cells named "ref" run their GEMMs and gates on jit code).
  static FastCallChoice prepare(const dnnl::primitive_desc_base &pd,
                                dnnl::primitive primitive,
                                const std::vector<Binding> &buffers,
                                std::string_view whyReferenceIsFast = {});

  size_t scratchBytes() const override { return scratchBytes_; }
  Status run(void *scratch) override;
  const std::string &implementation() const override { return name_; }

private:
  struct Reorder {
    dnnl::reorder primitive;
    dnnl::memory from, to;
  };
  /// Memory at `offset` bytes into the scratch (its handle set per run).
  struct ScratchMemory {
    dnnl::memory memory;
    size_t offset;
  };
  /// A 16-bit buffer the primitive reads or writes as f32 (`f32`, in the
  /// scratch).
  struct F32Copy {
    uint16_t *narrow;
    DType storage;
    dnnl::memory f32;
    size_t count;
    bool output;
  };
  /// The buffer -> its f32 copy (before the run); the f32 result -> the
  /// buffer, rounded once (after it).
  static void widen(const F32Copy &c);
  static void narrow(const F32Copy &c);
  /// f32 values rounded to a 16-bit type and kept as f32 (Binding::
  /// roundedTo): an operand's from `from` into `to` (in the scratch) before
  /// the run; a result's (`from` null) in place in `to` after it.
  struct Rounding {
    const float *from;
    dnnl::memory to;
    size_t count;
    DType type;
  };
  static void round(const Rounding &r);

  dnnl::primitive primitive_;
  dnnl::stream stream_;
  /// Memory bound as it is that the call keeps alive: prepared constants
  /// (shared with other calls made from the same weights: constantCache() in
  /// OneDnn.cpp) and Binding::prepared memory.
  std::vector<std::shared_ptr<const dnnl::memory>> held_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::memory scratch_; ///< the primitive's scratchpad
  std::vector<ScratchMemory> inScratch_;
  std::vector<Reorder> beforeRun_, afterRun_;
  std::vector<F32Copy> copies_;
  std::vector<Rounding> roundings_;
  size_t primitiveScratchBytes_ = 0, scratchBytes_ = 0;
  std::string name_;
};

/// cpu::preparedConstantBytes (FastCalls.h): the live constants' bytes.
size_t preparedConstantBytes();

/// Whether `pd` is one of oneDNN's reference implementations: generic C++
/// loops that the project's own kernels beat.
bool isReferenceImplementation(const dnnl::primitive_desc_base &pd);
/// The implementation name of `pd` ("onednn:" + impl_info_str).
std::string implementationName(const dnnl::primitive_desc_base &pd);

/// The calls (FastCalls.cpp's table dispatches to them), one signature: a
/// prepared call, or none with the reason; `constant[k]`: operand k never
/// changes while the plan is loaded (a weight); `filter`: the channels-first
/// buffer behind a convolution's filter, if any (the others ignore it).
using PrepareFn = FastCallChoice (*)(const PlanCall &call,
                                     const std::vector<TensorView> &operands,
                                     const std::vector<TensorView> &results,
                                     const std::vector<bool> &constant,
                                     const FilterSource *filter);
FastCallChoice prepareMatmul(const PlanCall &call,
                             const std::vector<TensorView> &operands,
                             const std::vector<TensorView> &results,
                             const std::vector<bool> &constant,
                             const FilterSource *filter);
FastCallChoice prepareAttention(const PlanCall &call,
                                const std::vector<TensorView> &operands,
                                const std::vector<TensorView> &results,
                                const std::vector<bool> &constant,
                                const FilterSource *filter);
/// A channels-last 2-d convolution with an x or y widened to f32, in blocks
/// of output rows (OneDnnConvTiles.cpp); no call (and no reason) where it
/// does not pay: prepareConv then binds the whole tensors.
FastCallChoice prepareTiledWidenedConv(
    const TensorView &x, const TensorView &w, const TensorView *bias,
    const TensorView *residual, const TensorView &y, const ConvOptions &o,
    const std::vector<bool> &constant, const FilterSource *filter);
FastCallChoice prepareConv(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results,
                           const std::vector<bool> &constant,
                           const FilterSource *filter);
/// A fused program that is a chain (each step reads the one before and at
/// most one input) of oneDNN eltwise and binary functions: one binary
/// primitive with eltwise and binary post-ops (f32 inside, one rounding at
/// the store); others are left to the own kernel, with the reason.
FastCallChoice prepareFusedChain(const FusedProgram &program,
                                 const std::vector<TensorView> &operands,
                                 const TensorView &y);
/// y = dy * GELU'(x) (exact or tanh form) as one eltwise backward primitive
/// (y may be dy itself: in place): dy, x and y of one shape and dtype (f32
/// or bf16). The matmul epilogues gelu_grad / gelu_tanh_grad and the
/// elementwise functions of those names.
FastCallChoice prepareActivationGradient(ActivationGradient gradient,
                                         const TensorView &dy,
                                         const TensorView &x,
                                         const TensorView &y);
FastCallChoice prepareElementwise(const PlanCall &call,
                                  const std::vector<TensorView> &operands,
                                  const std::vector<TensorView> &results,
                                  const std::vector<bool> &constant,
                                  const FilterSource *filter);
FastCallChoice prepareConvBackwardData(const PlanCall &call,
                                       const std::vector<TensorView> &operands,
                                       const std::vector<TensorView> &results,
                                       const std::vector<bool> &constant,
                                       const FilterSource *filter);
FastCallChoice prepareConvBackwardFilter(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const std::vector<TensorView> &results, const std::vector<bool> &constant,
    const FilterSource *filter);
FastCallChoice prepareBatchNormInference(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const std::vector<TensorView> &results, const std::vector<bool> &constant,
    const FilterSource *filter);
FastCallChoice prepareBatchNormTraining(const PlanCall &call,
                                        const std::vector<TensorView> &operands,
                                        const std::vector<TensorView> &results,
                                        const std::vector<bool> &constant,
                                        const FilterSource *filter);
FastCallChoice prepareBatchNormBackward(const PlanCall &call,
                                        const std::vector<TensorView> &operands,
                                        const std::vector<TensorView> &results,
                                        const std::vector<bool> &constant,
                                        const FilterSource *filter);
FastCallChoice prepareRnn(const PlanCall &call,
                          const std::vector<TensorView> &operands,
                          const std::vector<TensorView> &results,
                          const std::vector<bool> &constant,
                          const FilterSource *filter);
FastCallChoice prepareSoftmax(const PlanCall &call,
                              const std::vector<TensorView> &operands,
                              const std::vector<TensorView> &results,
                              const std::vector<bool> &constant,
                              const FilterSource *filter);
FastCallChoice prepareLayerNorm(const PlanCall &call,
                                const std::vector<TensorView> &operands,
                                const std::vector<TensorView> &results,
                                const std::vector<bool> &constant,
                                const FilterSource *filter);
/// kernel.rms_norm and kernel.group_norm: always the own kernels (oneDNN
/// 3.2's layer normalization has no RMS mode, and it has no group
/// normalization); the reasons for --timing.
FastCallChoice prepareGroupNorm(const PlanCall &call,
                                const std::vector<TensorView> &operands,
                                const std::vector<TensorView> &results,
                                const std::vector<bool> &constant,
                                const FilterSource *filter);
FastCallChoice prepareRmsNorm(const PlanCall &call,
                              const std::vector<TensorView> &operands,
                              const std::vector<TensorView> &results,
                              const std::vector<bool> &constant,
                              const FilterSource *filter);
FastCallChoice prepareLrn(const PlanCall &call,
                          const std::vector<TensorView> &operands,
                          const std::vector<TensorView> &results,
                          const std::vector<bool> &constant,
                          const FilterSource *filter);
FastCallChoice preparePool(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results,
                           const std::vector<bool> &constant,
                           const FilterSource *filter);

} // namespace mp::rt::cpu::onednn

#endif // MP_RUNTIME_CPU_ONEDNN_ONEDNN_H
