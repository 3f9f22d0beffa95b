//===- CollectiveCalls.cpp - comm.* calls: reductions over the ranks ------===//
//
// comm.all_reduce: x_1..x_n -> y_1..y_n (each y_i of x_i's dtype and shape)
// over every rank of a data-parallel run (Communicator.h). Attributes:
//   reduction     "mean" (the sum divided by the number of ranks: averaged
//                 gradients), "sum" or "max" (a found-inf flag)
//   reduce_type   f32, bf16 or f16 (a dtype code): what travels and is summed
//
// The buffers of one call (a bucket) are packed into one message in the
// reduce dtype. A 16-bit mean divides by the rank count before it rounds
// (DDP's pre-division: the sum cannot overflow where the average does
// not); an f32 mean sums, then divides. Without a communicator the call is
// the identity (through the reduce dtype's rounding).
//
//===----------------------------------------------------------------------===//
#include "../KernelUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>

namespace mp::rt::cpu {

namespace {

constexpr int64_t kChunk = 4096; ///< elements converted at a time

/// Elements [first, first + n) of a float view widened to f32 (f64 rounded
/// once).
void widen(const TensorView &v, int64_t first, int64_t n, float *out) {
  if (v.dtype == DType::F64) {
    const double *src = v.as<const double>() + first;
    for (int64_t k = 0; k < n; ++k)
      out[k] = static_cast<float>(src[k]);
    return;
  }
  detail::toF32(v.dtype,
                static_cast<const char *>(v.data) +
                    first * int64_t(byteSize(v.dtype)),
                out, n);
}

/// f32 values into elements [first, first + n) of a float view, rounded
/// once.
void narrow(const float *in, int64_t n, const TensorView &v, int64_t first) {
  if (v.dtype == DType::F64) {
    double *dst = v.as<double>() + first;
    for (int64_t k = 0; k < n; ++k)
      dst[k] = in[k];
    return;
  }
  detail::fromF32(
      in, v.dtype,
      static_cast<char *>(v.data) + first * int64_t(byteSize(v.dtype)), n);
}

Status allReduceCall(const CallArgs &args) {
  MP_RT_TRY_ASSIGN(o, allReduceOptionsOf(args.call));
  size_t total = 0;
  if (Status s = checkAllReduce(args.operands, args.results, &total); !s)
    return s;
  std::shared_ptr<Communicator> alone;
  Communicator *comm = args.communicator;
  if (!comm) {
    alone = makeSingleProcessCommunicator();
    comm = alone.get();
  }
  const float before = allReducePreScale(o, comm->size());
  const float after = allReducePostDivisor(o, comm->size());
  const DType wire = o.wire;

  void *staging = comm->staging(total * byteSize(wire));
  const TensorView packed{wire, {static_cast<int64_t>(total)}, staging};
  float chunk[kChunk];
  // Pack: each buffer in turn, widened, scaled, rounded to the reduce type.
  int64_t at = 0;
  for (const TensorView &x : args.operands) {
    for (int64_t k = 0, n = x.numElements(); k < n; k += kChunk) {
      const int64_t m = std::min(kChunk, n - k);
      widen(x, k, m, chunk);
      if (before != 1.0f)
        for (int64_t e = 0; e < m; ++e)
          chunk[e] *= before;
      narrow(chunk, m, packed, at + k);
    }
    at += x.numElements();
  }
  if (Status s = comm->allReduce(staging, total, wire, o.op); !s)
    return Status::error("comm.all_reduce (" + comm->describe() +
                         "): " + s.message());
  // Unpack: the reduced elements, divided, rounded to each result's type.
  at = 0;
  for (const TensorView &y : args.results) {
    for (int64_t k = 0, n = y.numElements(); k < n; k += kChunk) {
      const int64_t m = std::min(kChunk, n - k);
      widen(packed, at + k, m, chunk);
      if (after != 1.0f)
        for (int64_t e = 0; e < m; ++e)
          chunk[e] /= after;
      narrow(chunk, m, y, k);
    }
    at += y.numElements();
  }
  return Status::ok();
}

} // namespace

Result<AllReduceOptions> allReduceOptionsOf(const PlanCall &call) {
  MP_RT_TRY_ASSIGN(reduction, stringAttr(call, "reduction"));
  MP_RT_TRY_ASSIGN(wire, dtypeAttr(call, "reduce_type"));
  AllReduceOptions o;
  if (reduction == "max") {
    o.op = CollectiveOp::Max;
    o.mean = false;
  } else if (reduction == "sum") {
    o.mean = false;
  } else if (reduction != "mean") {
    return Status::error("comm.all_reduce: reduction '" + reduction +
                         "' (mean, sum or max)");
  }
  if (wire != DType::F32 && wire != DType::BF16 && wire != DType::F16)
    return Status::error("comm.all_reduce: reduce_type " +
                         std::string(dtypeName(wire)) + " (f32, bf16 or f16)");
  o.wire = wire;
  return o;
}

Status checkAllReduce(const std::vector<TensorView> &operands,
                      const std::vector<TensorView> &results, size_t *total) {
  if (operands.empty() || operands.size() != results.size())
    return Status::error("comm.all_reduce needs n >= 1 operands and as many "
                         "results, got " +
                         std::to_string(operands.size()) + " and " +
                         std::to_string(results.size()));
  size_t count = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const TensorView &x = operands[i], &y = results[i];
    if (!isFloat(x.dtype) || x.dtype != y.dtype || x.shape != y.shape)
      return Status::error(
          "comm.all_reduce: operand #" + std::to_string(i) + " is " +
          std::string(dtypeName(x.dtype)) + " and result #" +
          std::to_string(i) + " is " + std::string(dtypeName(y.dtype)) +
          ": each result is its operand's float type and shape");
    count += static_cast<size_t>(x.numElements());
  }
  if (total)
    *total = count;
  return Status::ok();
}

float allReducePreScale(const AllReduceOptions &o, int ranks) {
  // A 16-bit mean divides first (it must not overflow on the way).
  return o.mean && o.wire != DType::F32 ? 1.0f / static_cast<float>(ranks)
                                        : 1.0f;
}

float allReducePostDivisor(const AllReduceOptions &o, int ranks) {
  // f32 sums exactly as far as f32 goes and divides at the end.
  return o.mean && o.wire == DType::F32 ? static_cast<float>(ranks) : 1.0f;
}

void addCollectiveCalls(CallTable &table) {
  MP_ADD_CALL("comm.all_reduce", allReduceCall);
}

} // namespace mp::rt::cpu
