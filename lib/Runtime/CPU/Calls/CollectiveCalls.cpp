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
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/Half.h"

#include <cstring>

namespace mp::rt::cpu {

namespace {

/// The element `i` of a float view, as f32.
float loadFloat(const TensorView &v, size_t i) {
  switch (v.dtype) {
  case DType::F32:
    return v.as<const float>()[i];
  case DType::F64:
    return static_cast<float>(v.as<const double>()[i]);
  case DType::F16:
    return detail::halfBitsToFloat(v.as<const uint16_t>()[i]);
  case DType::BF16:
    return detail::bfloat16BitsToFloat(v.as<const uint16_t>()[i]);
  default:
    return 0;
  }
}

void storeFloat(const TensorView &v, size_t i, float x) {
  switch (v.dtype) {
  case DType::F32:
    v.as<float>()[i] = x;
    break;
  case DType::F64:
    v.as<double>()[i] = x;
    break;
  case DType::F16:
    v.as<uint16_t>()[i] = detail::floatToHalfBits(x);
    break;
  case DType::BF16:
    v.as<uint16_t>()[i] = detail::floatToBFloat16Bits(x);
    break;
  default:
    break;
  }
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
  TensorView packed{wire, {static_cast<int64_t>(total)}, staging};
  size_t at = 0;
  for (const TensorView &x : args.operands) {
    const size_t n = static_cast<size_t>(x.numElements());
    if (wire == DType::F32 && x.dtype == DType::F32 && before == 1.0f)
      std::memcpy(static_cast<float *>(staging) + at, x.data,
                  n * sizeof(float));
    else
      for (size_t k = 0; k < n; ++k)
        storeFloat(packed, at + k, loadFloat(x, k) * before);
    at += n;
  }
  if (Status s = comm->allReduce(staging, total, wire, o.op); !s)
    return Status::error("comm.all_reduce (" + comm->describe() +
                         "): " + s.message());
  at = 0;
  for (const TensorView &y : args.results) {
    const size_t n = static_cast<size_t>(y.numElements());
    if (wire == DType::F32 && y.dtype == DType::F32 && after == 1.0f)
      std::memcpy(y.data, static_cast<const float *>(staging) + at,
                  n * sizeof(float));
    else
      for (size_t k = 0; k < n; ++k)
        storeFloat(y, k, loadFloat(packed, at + k) / after);
    at += n;
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
