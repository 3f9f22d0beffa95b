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
using cpu::boolAttr;
using cpu::channelsLastAttr;
using cpu::dtypeAttr;
using cpu::floatAttr;
using cpu::hasBuffer;
using cpu::intAttr;
using cpu::intListAttr;
using cpu::stringAttr;

Result<uint64_t> planCopy(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "copy";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  if (x.numElements() != y.numElements())
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different numbers of elements");
  return x.addr == y.addr ? uint64_t(0) : x.byteCount();
}

Result<GatherCopyParams> planTranspose(const TensorDesc &x, const TensorDesc &y,
                                       const std::vector<int64_t> &permIn) {
  constexpr std::string_view op = "transpose";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = permIn;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank)
    return fail(op, "perm has " + std::to_string(perm.size()) +
                        " entries for x of rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail(op, "perm " + shapeStr(perm) +
                          " is not a permutation of 0.." +
                          std::to_string(rank) + "-1");
    seen[p] = true;
  }
  if (y.shape.size() != rank)
    return fail(op, "y " + shapeStr(y.shape) + " has another rank than x " +
                        shapeStr(x.shape));
  for (size_t i = 0; i < rank; ++i)
    if (y.shape[i] != x.shape[perm[i]])
      return fail(op, "y " + shapeStr(y.shape) + " is not x " +
                          shapeStr(x.shape) + " permuted by " + shapeStr(perm));
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
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  if (x.shape.size() > y.shape.size())
    return fail(op, "x " + shapeStr(x.shape) + " has a higher rank than y " +
                        shapeStr(y.shape));
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
  if (inputs.empty())
    return fail(op, "needs at least one input");
  const int64_t r = static_cast<int64_t>(y.shape.size());
  int64_t axis = axisIn;
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for y " +
                        shapeStr(y.shape));
  if (axis < 0)
    axis += r;
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc &in = inputs[i];
    std::string name = "input " + std::to_string(i);
    if (Status s = checkDesc(op, name, in); !s)
      return s;
    if (in.dtype != y.dtype)
      return fail(op, name + " has dtype " + dt(in.dtype) + " but y has " +
                          dt(y.dtype));
    bool shapeOk = static_cast<int64_t>(in.shape.size()) == r;
    for (int64_t d = 0; shapeOk && d < r; ++d)
      shapeOk = d == axis || in.shape[d] == y.shape[d];
    if (!shapeOk)
      return fail(op, name + " " + shapeStr(in.shape) + " does not match y " +
                          shapeStr(y.shape) + " outside axis " +
                          std::to_string(axis));
    if (overlapping(in, y))
      return fail(op, "y overlaps " + name);
    total += in.shape[axis];
  }
  if (total != y.shape[axis])
    return fail(op, "the inputs add up to " + std::to_string(total) +
                        " along axis " + std::to_string(axis) + ", but y " +
                        shapeStr(y.shape) + " has " +
                        std::to_string(y.shape[axis]));
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
