//===- CudaPlanningSoftmax.cpp - planning of cudnn.softmax ----------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.softmax and
// kernel.scaled_softmax (the CPU's Softmax.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

Result<SoftmaxParams> planSoftmax(const PlanCall &call, const TensorDesc &x,
                                  const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  MP_TRY(log, intAttr(call, "log", 0));
  if (log != 0 && log != 1)
    return Status::error("attribute 'log' must be 0 or 1, got " +
                         std::to_string(log));
  // checkDesc: the dtype is known (the CPU's checks assume it); the rest
  // is the CPU's own checks.
  std::string_view op = log ? "logSoftmax" : "softmax";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  int64_t axis = axisIn;
  if (Status s = cpu::checkSoftmax(viewOf(x), viewOf(y), axis, log != 0); !s)
    return s;
  SoftmaxParams p;
  p.dtype = code(x.dtype);
  p.log = static_cast<int32_t>(log);
  p.outer = product(x.shape, 0, axis);
  p.len = x.shape[axis];
  p.inner = product(x.shape, axis + 1, x.shape.size());
  p.in = cptr(x);
  p.out = mptr(y);
  return p;
}

Result<SoftmaxParams> planScaledSoftmax(const PlanCall &call,
                                        const std::vector<TensorDesc> &ops,
                                        const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 2> in;
  std::array<const TensorDesc *, 1> out;
  if (Status s =
          cpu::bindCallBuffers(call, ops, {{{"x", false}, {"mask", true}}}, in,
                               res, {{{"y", false}}}, out);
      !s)
    return s;
  MP_TRY(scale, floatAttr(call, "scale", 1.0));
  for (const TensorDesc *d : {in[0], in[1], out[0]})
    if (d)
      if (Status s = checkDesc("scaled_softmax", "operand", *d); !s)
        return s;
  const TensorDesc &x = *in[0];
  TensorView mask = in[1] ? viewOf(*in[1]) : TensorView{};
  if (Status s = cpu::checkScaledSoftmax(viewOf(x), in[1] ? &mask : nullptr,
                                         viewOf(*out[0]));
      !s)
    return s;
  if (in[1] && x.shape.size() > static_cast<size_t>(kMaxDims))
    return fail("scaled_softmax", "a mask over more than " +
                                      std::to_string(kMaxDims) +
                                      " dims is not implemented on the GPU");
  SoftmaxParams p;
  p.dtype = code(x.dtype);
  p.outer = product(x.shape, 0, x.shape.size() - 1);
  p.len = x.shape.back();
  p.inner = 1;
  p.scale = static_cast<float>(scale);
  p.in = cptr(x);
  p.out = mptr(out[0]);
  if (in[1]) {
    p.maskDtype = code(in[1]->dtype);
    p.rank = static_cast<int32_t>(x.shape.size());
    std::vector<int64_t> strides =
        cpu::broadcastStridesOf(in[1]->shape, x.shape);
    for (size_t d = 0; d < x.shape.size(); ++d) {
      p.dims[d] = x.shape[d];
      p.maskStrides[d] = strides[d];
    }
    p.mask = cptr(*in[1]);
  }
  return p;
}

} // namespace mp::rt::cuda
