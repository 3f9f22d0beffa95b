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

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mp::rt::cpu::onednn {

/// The CPU engine (one for the process; oneDNN engines are thread-safe).
const dnnl::engine &engine();

/// oneDNN's data type of a runtime dtype (f32, f16, bf16), if it has one.
std::optional<dnnl::memory::data_type> dataTypeOf(DType t);

/// A row-major descriptor of `dims` of dtype t.
dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims,
                             dnnl::memory::data_type t);

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

/// The eltwise post-op of an activation (none: no post-op).
dnnl::post_ops postOpsOf(Activation activation);

/// A primitive bound to the call's buffers. Operands that the primitive
/// wants in another layout are reordered: constant ones once, here, into
/// memory the call owns; the others before every run.
/// A buffer of the call as a primitive's argument: its layout and data.
struct Binding {
  int arg; ///< DNNL_ARG_SRC, ...
  dnnl::memory::desc desc;
  void *data;
};

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

class PrimitiveCall final : public PreparedCall {
public:
  /// The call running `pd`'s primitive on `buffers`, or the reference kernel
  /// when oneDNN's best is its own reference code. The weights (if bound)
  /// go into the layout `pd` chose: once when `constantWeights`, else
  /// before every run.
  static FastCallChoice prepare(const dnnl::primitive_desc_base &pd,
                                dnnl::primitive primitive,
                                const std::vector<Binding> &buffers,
                                bool constantWeights);

  size_t scratchBytes() const override { return scratchBytes_; }
  Status run(void *scratch) override;
  const std::string &implementation() const override { return name_; }

private:
  struct Reorder {
    dnnl::reorder primitive;
    dnnl::memory from, to;
  };
  dnnl::primitive primitive_;
  dnnl::stream stream_;
  std::unordered_map<int, dnnl::memory> args_;
  dnnl::memory scratch_;        ///< its handle is set to the workspace per run
  std::vector<Reorder> perRun_; ///< operands reordered before every run
  size_t scratchBytes_ = 0;
  std::string name_;
};

/// The implementation name of `pd` ("onednn:" + impl_info_str).
std::string implementationName(const dnnl::primitive_desc_base &pd);

/// The calls (FastCalls.cpp dispatches to them). A result with no call
/// carries the reason.
FastCallChoice prepareMatmul(const PlanCall &call,
                             const std::vector<TensorView> &operands,
                             const std::vector<TensorView> &results,
                             const std::vector<bool> &constant);
FastCallChoice prepareConv(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results,
                           const std::vector<bool> &constant);
FastCallChoice preparePool(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results);

} // namespace mp::rt::cpu::onednn

#endif // MP_RUNTIME_CPU_ONEDNN_ONEDNN_H
