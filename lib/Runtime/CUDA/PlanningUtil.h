//===- PlanningUtil.h - helpers of the CUDA backend's planners ----*- C++
//-*-===//
//
// Small helpers shared by the planner files (CudaPlanning.cpp, the
// dispatcher, and the CudaPlanning*.cpp files by family): error messages in
// the CPU backend's words, dtype codes and pointers for kernel parameters,
// shape arithmetic, and TensorViews of descriptors so that a planner can run
// the CPU kernel's own checks (mp/Runtime/CPU/*Kernels.h check* functions)
// instead of repeating them. Private to lib/Runtime/CUDA; needs no CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_PLANNINGUTIL_H
#define MP_LIB_RUNTIME_CUDA_PLANNINGUTIL_H

#include "mp/Runtime/CUDA/CudaPlanning.h"

// The CPU kernels' private argument checks (spatialAttr, dilatedExtent):
// the planners state the same rules with the same functions.
#include "../CPU/KernelUtil.h"
#include "mp/Runtime/CPU/Calls.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace mp::rt::cuda::planning {

inline std::string dt(DType t) { return std::string(dtypeName(t)); }

inline std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

inline Status fail(std::string_view op, const std::string &what) {
  return Status::error(std::string(op) + ": " + what);
}

inline bool isF32or16(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

inline bool isInteger(DType t) {
  return !isFloat(t) && t != DType::Bool && byteSize(t) != 0;
}

inline int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// The CPU's checkView of the descriptor (non-negative dims, an element
/// count that does not overflow), and a known dtype.
Status checkDesc(std::string_view op, std::string_view name,
                 const TensorDesc &v);

// The CPU calls' attribute readers (mp/Runtime/CPU/Calls.h), the planners'
// too: both backends read attributes with the same functions.
using cpu::boolAttr;
using cpu::channelsLastAttr;
using cpu::checkComputeType;
using cpu::dtypeAttr;
using cpu::floatAttr;
using cpu::hasBuffer;
using cpu::intAttr;
using cpu::intListAttr;
using cpu::stringAttr;

using cpu::detail::batchOffsets;
using cpu::detail::broadcastShapes;
using cpu::detail::dilatedExtent;
using cpu::detail::spatialAttr;

using Spec = cpu::BufferSpec;

/// The descriptors of a call's buffers in the order of `specs` (null for
/// absent optional ones), placed by their has_<name> attributes.
template <size_t N>
Status bindDescs(const PlanCall &call, const std::vector<TensorDesc> &given,
                 const char *what, const std::array<Spec, N> &specs,
                 std::array<const TensorDesc *, N> &out) {
  return cpu::bindBuffers(call, given, what, specs, out);
}

inline int32_t code(DType t) { return static_cast<int32_t>(t); }

/// The epilogue kernel's code of an activation (matmul's and convolution's).
inline EpilogueAct epilogueActOf(cpu::Activation activation) {
  switch (activation) {
  case cpu::Activation::None:
    return kActNone;
  case cpu::Activation::Relu:
    return kActRelu;
  case cpu::Activation::Gelu:
    return kActGelu;
  case cpu::Activation::GeluTanh:
    return kActGeluTanh;
  case cpu::Activation::Clip:
    return kActClip;
  case cpu::Activation::Silu:
    return kActSilu;
  case cpu::Activation::Sigmoid:
    return kActSigmoid;
  case cpu::Activation::Tanh:
    return kActTanh;
  case cpu::Activation::HardSwish:
    return kActHardSwish;
  }
  return kActNone;
}

/// The epilogue kernel's code of a matmul's activation gradient (the
/// product times the activation's derivative at aux), or of `activation`.
inline EpilogueAct epilogueActOf(cpu::ActivationGradient gradient,
                                 cpu::Activation activation) {
  switch (gradient) {
  case cpu::ActivationGradient::None:
    return epilogueActOf(activation);
  case cpu::ActivationGradient::Relu:
    return kActReluGrad;
  case cpu::ActivationGradient::Gelu:
    return kActGeluGrad;
  case cpu::ActivationGradient::GeluTanh:
    return kActGeluTanhGrad;
  }
  return kActNone;
}

inline const void *cptr(const TensorDesc &t) { return t.ptr<const void>(); }
inline void *mptr(const TensorDesc &t) { return t.ptr<void>(); }
inline const void *cptr(const TensorDesc *t) {
  return t ? t->ptr<const void>() : nullptr;
}
inline void *mptr(const TensorDesc *t) { return t ? t->ptr<void>() : nullptr; }

/// Row-major strides of a shape, in elements.
inline std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> r(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    r[i - 1] = r[i] * s[i];
  return r;
}

inline int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= s[i];
  return p;
}

/// The operand and result counts, in the words of the CPU's checkArity.
inline Status arity(const std::vector<TensorDesc> &ops,
                    const std::vector<TensorDesc> &res, size_t minOps,
                    size_t maxOps, size_t minRes, size_t maxRes) {
  auto range = [](size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo)
                    : std::to_string(lo) + " to " + std::to_string(hi);
  };
  if (ops.size() < minOps || ops.size() > maxOps)
    return Status::error("expects " + range(minOps, maxOps) +
                         " operands, got " + std::to_string(ops.size()));
  if (res.size() < minRes || res.size() > maxRes)
    return Status::error("expects " + range(minRes, maxRes) + " results, got " +
                         std::to_string(res.size()));
  return Status::ok();
}

/// The descriptor as a CPU TensorView (its device address as the data
/// pointer: the CPU checks only compare and null-test pointers).
inline TensorView viewOf(const TensorDesc &d) {
  return TensorView{d.dtype, d.shape,
                    reinterpret_cast<void *>(static_cast<uintptr_t>(d.addr))};
}

/// Views of descriptors, with null for absent optional ones (the pointers
/// stay valid while the Views lives).
template <size_t N> struct Views {
  std::array<TensorView, N> storage;
  std::array<const TensorView *, N> ptr{};
  explicit Views(const std::array<const TensorDesc *, N> &descs) {
    for (size_t i = 0; i < N; ++i)
      if (descs[i]) {
        storage[i] = viewOf(*descs[i]);
        ptr[i] = &storage[i];
      }
  }
  const TensorView *operator[](size_t i) const { return ptr[i]; }
};

/// The preamble of a planner of one operand x and one result y with
/// options: the arity, the options (optionsOf(call)) and the CPU kernel's
/// check (check(view of x, view of y, options)). Returns the options.
template <typename OptionsOf, typename Check>
auto checkedUnaryOptions(const PlanCall &call,
                         const std::vector<TensorDesc> &ops,
                         const std::vector<TensorDesc> &res,
                         OptionsOf optionsOf, Check check)
    -> decltype(optionsOf(call)) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  auto o = optionsOf(call);
  if (!o)
    return o;
  if (Status s = check(viewOf(ops[0]), viewOf(res[0]), *o); !s)
    return s;
  return o;
}

/// The preamble of a planner whose operands and results are named
/// (cpu::BufferSpec lists): binds them into `in` and `out`
/// (cpu::bindCallBuffers), reads the options (optionsOf(call)) and runs the
/// CPU kernel's check (check(operand Views, result Views, options)).
/// Returns the options.
template <size_t N, size_t M, typename OptionsOf, typename Check>
auto bindAndCheck(const PlanCall &call, const std::vector<TensorDesc> &ops,
                  const std::array<cpu::BufferSpec, N> &operandSpecs,
                  std::array<const TensorDesc *, N> &in,
                  const std::vector<TensorDesc> &res,
                  const std::array<cpu::BufferSpec, M> &resultSpecs,
                  std::array<const TensorDesc *, M> &out, OptionsOf optionsOf,
                  Check check) -> decltype(optionsOf(call)) {
  if (Status s = cpu::bindCallBuffers(call, ops, operandSpecs, in, res,
                                      resultSpecs, out);
      !s)
    return s;
  auto o = optionsOf(call);
  if (!o)
    return o;
  Views<N> vi(in);
  Views<M> vo(out);
  if (Status s = check(vi, vo, *o); !s)
    return s;
  return o;
}

/// The planners of the files by topic (CudaPlanningNN.cpp,
/// CudaPlanningData.cpp): cudaCallKinds() lists their kinds and planCall()
/// runs them (topicPlanners(), CudaPlanning.cpp).
struct TopicPlanner {
  const char *kind;
  Status (*plan)(const PlanCall &call, const std::vector<TensorDesc> &operands,
                 const std::vector<TensorDesc> &results);
};

/// A planner's Result as a Status (for TopicPlanner tables).
template <auto Planner>
Status statusOf(const PlanCall &call, const std::vector<TensorDesc> &ops,
                const std::vector<TensorDesc> &res) {
  auto r = Planner(call, ops, res);
  return r ? Status::ok() : r.status();
}

/// In a function returning a Status or a Result: `auto var = *expr` for a
/// Result `expr`, or return its error.
#define MP_TRY(var, expr)                                                      \
  auto var##Result = (expr);                                                   \
  if (!var##Result)                                                            \
    return var##Result.status();                                               \
  auto var = var##Result.take()

} // namespace mp::rt::cuda::planning

#endif // MP_LIB_RUNTIME_CUDA_PLANNINGUTIL_H
