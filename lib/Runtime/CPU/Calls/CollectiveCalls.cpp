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
  const PlanCall &call = args.call;
  if (args.operands.empty() || args.operands.size() != args.results.size())
    return Status::error("comm.all_reduce needs n >= 1 operands and as many "
                         "results, got " +
                         std::to_string(args.operands.size()) + " and " +
                         std::to_string(args.results.size()));
  MP_RT_TRY_ASSIGN(reduction, stringAttr(call, "reduction"));
  MP_RT_TRY_ASSIGN(wire, dtypeAttr(call, "reduce_type"));
  ReduceOp op;
  if (reduction == "mean" || reduction == "sum")
    op = ReduceOp::Sum;
  else if (reduction == "max")
    op = ReduceOp::Max;
  else
    return Status::error("comm.all_reduce: reduction '" + reduction +
                         "' (mean, sum or max)");
  if (wire != DType::F32 && wire != DType::BF16 && wire != DType::F16)
    return Status::error("comm.all_reduce: reduce_type " +
                         std::string(dtypeName(wire)) +
                         " (f32, bf16 or f16)");
  size_t total = 0;
  for (size_t i = 0; i < args.operands.size(); ++i) {
    const TensorView &x = args.operands[i], &y = args.results[i];
    if (!isFloat(x.dtype) || x.dtype != y.dtype || x.shape != y.shape)
      return Status::error(
          "comm.all_reduce: operand #" + std::to_string(i) + " is " +
          std::string(dtypeName(x.dtype)) + " and result #" +
          std::to_string(i) + " is " + std::string(dtypeName(y.dtype)) +
          ": each result is its operand's float type and shape");
    total += static_cast<size_t>(x.numElements());
  }

  std::shared_ptr<Communicator> alone;
  Communicator *comm = args.communicator;
  if (!comm) {
    alone = makeSingleProcessCommunicator();
    comm = alone.get();
  }
  const float ranks = static_cast<float>(comm->size());
  const bool mean = reduction == "mean";
  // A 16-bit mean divides first (it must not overflow on the way); f32 sums
  // exactly as far as f32 goes and divides at the end.
  const float before = mean && wire != DType::F32 ? 1.0f / ranks : 1.0f;
  const float after = mean && wire == DType::F32 ? ranks : 1.0f;

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
  if (Status s = comm->allReduce(staging, total, wire, op); !s)
    return Status::error("comm.all_reduce (" + comm->describe() + "): " +
                         s.message());
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

void addCollectiveCalls(CallTable &table) {
  MP_ADD_CALL("comm.all_reduce", allReduceCall);
}

} // namespace mp::rt::cpu
