//===- CudaPlanningSoftmax.cpp - planning of cudnn.softmax ----------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.softmax (the CPU's Softmax.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;
using cpu::boolAttr;
using cpu::channelsLastAttr;
using cpu::dtypeAttr;
using cpu::floatAttr;
using cpu::hasBuffer;
using cpu::intAttr;
using cpu::intListAttr;
using cpu::stringAttr;

Result<SoftmaxParams> planSoftmax(const PlanCall &call, const TensorDesc &x,
                                  const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  MP_TRY(log, intAttr(call, "log", 0));
  if (log != 0 && log != 1)
    return Status::error("attribute 'log' must be 0 or 1, got " +
                         std::to_string(log));
  std::string_view op = log ? "logSoftmax" : "softmax";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (!(isF32or16(x.dtype) || x.dtype == DType::F64))
    return fail(op, "x has dtype " + dt(x.dtype) +
                        "; expected f32, f16, bf16 or f64");
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y (" + dt(y.dtype) + " " + shapeStr(y.shape) +
                        ") must have x's dtype and shape (" + dt(x.dtype) +
                        " " + shapeStr(x.shape) + ")");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    return fail(op, "x needs rank >= 1");
  int64_t axis = axisIn;
  if (axis < -rank || axis >= rank)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for x " +
                        shapeStr(x.shape));
  if (axis < 0)
    axis += rank;
  if (overlapping(x, y) && x.addr != y.addr)
    return fail(op, "y overlaps x without being x itself");
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

} // namespace mp::rt::cuda
