//===- CudaPlanningDataMovement.cpp - copies and window copies ------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. kernel.copy, kernel.transpose,
// kernel.broadcast, kernel.slice, kernel.concat and the window copies of the
// other planners (the CPU's DataMovement.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

Result<uint64_t> planCopy(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "copy";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (Status s = cpu::checkCopy(viewOf(x), viewOf(y)); !s)
    return s;
  return x.addr == y.addr ? uint64_t(0) : x.byteCount();
}

Result<GatherCopyParams> planTranspose(const TensorDesc &x, const TensorDesc &y,
                                       const std::vector<int64_t> &permIn) {
  constexpr std::string_view op = "transpose";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  std::vector<int64_t> perm;
  if (Status s = cpu::checkTranspose(viewOf(x), viewOf(y), permIn, perm); !s)
    return s;
  const size_t rank = x.shape.size();
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  // y's dims with x's strides; size-1 dims dropped, neighbours that are
  // neighbours in x too merged.
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < rank; ++i) {
    int64_t d = y.shape[i], s = xs[perm[i]];
    if (d == 1)
      continue;
    if (!dims.empty() && strides.back() == s * d) {
      dims.back() *= d;
      strides.back() = s;
    } else {
      dims.push_back(d);
      strides.push_back(s);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "needs " + std::to_string(dims.size()) +
                        " dimensions after merging; the GPU kernel takes " +
                        std::to_string(kMaxDims));
  GatherCopyParams p;
  p.rank = static_cast<int32_t>(dims.size());
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.xStrides[i] = strides[i];
  }
  p.in = cptr(x);
  p.out = mptr(y);
  return p;
}

Result<EwParams> planBroadcast(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "broadcast";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (Status s = cpu::checkBroadcast(viewOf(x), viewOf(y)); !s)
    return s;
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  Result<EwParams> p = planBroadcastConvert(x, y);
  if (!p)
    return fail(op, "x " + shapeStr(x.shape) + " does not broadcast to y " +
                        shapeStr(y.shape));
  return p;
}

Result<GatherCopyParams> planSlice(const PlanCall &call, const TensorDesc &x,
                                   const TensorDesc &y) {
  MP_TRY(starts, intListAttr(call, "starts"));
  MP_TRY(givenSteps, intListAttr(call, "steps"));
  constexpr std::string_view op = "slice";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (Status s = cpu::checkSlice(viewOf(x), viewOf(y), starts, givenSteps); !s)
    return s;
  const size_t r = x.shape.size();
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  GatherCopyParams p;
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  p.in = cptr(x);
  p.out = mptr(y);
  if (p.n == 0)
    return p;
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < r; ++d) {
    p.base += starts[d] * xs[d];
    if (y.shape[d] == 1)
      continue; // its step does not matter (and may be huge)
    int64_t st = givenSteps[d] * xs[d];
    if (!dims.empty() && strides.back() == st * y.shape[d]) {
      dims.back() *= y.shape[d];
      strides.back() = st;
    } else {
      dims.push_back(y.shape[d]);
      strides.push_back(st);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "needs " + std::to_string(dims.size()) +
                        " dimensions after merging; the GPU kernel takes " +
                        std::to_string(kMaxDims));
  p.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.xStrides[i] = strides[i];
  }
  return p;
}

Result<std::vector<GatherCopyParams>>
planConcat(const PlanCall &call, const std::vector<TensorDesc> &inputs,
           const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  constexpr std::string_view op = "concat";
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  std::vector<TensorView> views;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (Status s = checkDesc(op, "input " + std::to_string(i), inputs[i]); !s)
      return s;
    views.push_back(viewOf(inputs[i]));
  }
  int64_t axis = axisIn;
  if (Status s = cpu::checkConcat(views, viewOf(y), axis); !s)
    return s;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (overlapping(inputs[i], y))
      return fail(op, "y overlaps input " + std::to_string(i));
  int64_t outer = product(y.shape, 0, static_cast<size_t>(axis));
  int64_t inner =
      product(y.shape, static_cast<size_t>(axis) + 1, y.shape.size());
  std::vector<GatherCopyParams> out;
  int64_t offset = 0;
  for (const TensorDesc &in : inputs) {
    int64_t len = in.shape[axis];
    GatherCopyParams p;
    p.scatter = 1;
    p.elemSize = static_cast<int32_t>(byteSize(y.dtype));
    p.rank = 2;
    p.dims[0] = outer;
    p.dims[1] = len * inner;
    p.xStrides[0] = y.shape[axis] * inner; // y's
    p.xStrides[1] = 1;
    p.base = offset * inner;
    p.n = in.numElements();
    p.in = cptr(in);
    p.out = mptr(y);
    offset += len;
    if (p.n)
      out.push_back(p);
  }
  return out;
}

Result<GatherCopyParams> planWindowCopy(DType dtype, const Shape &x,
                                        const Shape &y,
                                        const std::vector<int64_t> &start,
                                        const void *in, void *out) {
  if (x.size() != y.size() || start.size() != x.size())
    return Status::error("window copy: ranks differ");
  if (x.size() > static_cast<size_t>(kMaxDims))
    return Status::error("window copy: rank " + std::to_string(x.size()) +
                         " exceeds " + std::to_string(kMaxDims));
  GatherCopyParams p;
  p.rank = static_cast<int32_t>(std::max<size_t>(x.size(), 1));
  p.elemSize = static_cast<int32_t>(byteSize(dtype));
  p.window = 1;
  p.n = numElements(y);
  std::vector<int64_t> xs = stridesOf(x);
  for (size_t i = 0; i < x.size(); ++i) {
    p.dims[i] = y[i];
    p.xStrides[i] = xs[i];
    p.start[i] = start[i];
    p.xDims[i] = x[i];
  }
  if (x.empty()) {
    p.dims[0] = 1;
    p.xDims[0] = 1;
  }
  p.in = in;
  p.out = out;
  return p;
}

} // namespace mp::rt::cuda
