//===- Softmax.cpp - cuDNN-like softmax / log-softmax on the CPU ----------===//
//
// Along one axis, numerically stable: subtract the maximum, exponentiate,
// sum (in f64), normalize. 16-bit and f32 data compute in f32 and round once;
// f64 computes in f64. The tensor is seen as [outer, L, inner]: inner = 1 is
// a row per softmax, otherwise a slice [L, inner] is processed with vectors
// over inner.
//
//===----------------------------------------------------------------------===//
#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mp::rt::cpu {
using namespace detail;

namespace {

template <typename S, typename Acc>
void run(const S *x, S *y, int64_t outer, int64_t len, int64_t inner,
         bool log) {
  auto store = [](Acc v) {
    if constexpr (std::is_same_v<S, double>)
      return v;
    else
      return storeAs<S>(static_cast<float>(v));
  };
  auto loadAcc = [](S v) { return static_cast<Acc>(load(v)); };
  std::vector<Acc> buf(static_cast<size_t>(len * inner)),
      mx(static_cast<size_t>(inner));
  std::vector<double> sum(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const S *xs = x + o * len * inner;
    S *ys = y + o * len * inner;
    for (int64_t i = 0; i < len * inner; ++i)
      buf[i] = loadAcc(xs[i]);
    for (int64_t j = 0; j < inner; ++j)
      mx[j] = -std::numeric_limits<Acc>::infinity();
    for (int64_t l = 0; l < len; ++l)
      for (int64_t j = 0; j < inner; ++j) {
        Acc v = buf[l * inner + j];
        mx[j] = v > mx[j] ? v : mx[j];
      }
    // A maximum of -inf (every input -inf): shift by 0, not by -inf.
    for (int64_t j = 0; j < inner; ++j)
      if (mx[j] == -std::numeric_limits<Acc>::infinity())
        mx[j] = Acc(0);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t l = 0; l < len; ++l)
      for (int64_t j = 0; j < inner; ++j) {
        Acc &v = buf[l * inner + j];
        v -= mx[j];
        Acc e = std::exp(v);
        sum[j] += e;
        if (!log)
          v = e;
      }
    if (log) {
      for (int64_t j = 0; j < inner; ++j)
        mx[j] = static_cast<Acc>(std::log(sum[j]));
      for (int64_t l = 0; l < len; ++l)
        for (int64_t j = 0; j < inner; ++j)
          ys[l * inner + j] = store(buf[l * inner + j] - mx[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        mx[j] = static_cast<Acc>(1.0 / sum[j]);
      for (int64_t l = 0; l < len; ++l)
        for (int64_t j = 0; j < inner; ++j)
          ys[l * inner + j] = store(buf[l * inner + j] * mx[j]);
    }
  }
}

} // namespace

Status checkSoftmax(const TensorView &x, const TensorView &y, int64_t &axis,
                    bool log) {
  std::string_view op = log ? "logSoftmax" : "softmax";
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (!(isF32or16(x.dtype) || x.dtype == DType::F64))
    return fail(op, "x has dtype " + std::string(dtypeName(x.dtype)) +
                        "; expected f32, f16, bf16 or f64");
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y (" + std::string(dtypeName(y.dtype)) + " " +
                        shapeStr(y.shape) + ") must have x's dtype and shape (" +
                        std::string(dtypeName(x.dtype)) + " " +
                        shapeStr(x.shape) + ")");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    return fail(op, "x needs rank >= 1");
  if (axis < -rank || axis >= rank)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for x " +
                        shapeStr(x.shape));
  if (axis < 0)
    axis += rank;
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) &&
      x.data != y.data)
    return fail(op, "y overlaps x without being x itself");
  return Status::ok();
}

namespace {

Status softmaxImpl(const TensorView &x, const TensorView &y, int64_t axis,
                   bool log) {
  if (Status s = checkSoftmax(x, y, axis, log); !s)
    return s;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t outer = 1, inner = 1, len = x.shape[static_cast<size_t>(axis)];
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.shape[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= x.shape[static_cast<size_t>(i)];
  if (x.numElements() == 0)
    return Status::ok();
  if (x.dtype == DType::F64) {
    run<double, double>(x.as<const double>(), y.as<double>(), outer, len, inner,
                        log);
    return Status::ok();
  }
  withFloat16or32(x.dtype, [&](auto tag) {
    using S = decltype(tag);
    run<S, float>(x.as<const S>(), y.as<S>(), outer, len, inner, log);
  });
  return Status::ok();
}

} // namespace

Status softmax(const TensorView &x, const TensorView &y, int64_t axis) {
  return softmaxImpl(x, y, axis, false);
}

Status logSoftmax(const TensorView &x, const TensorView &y, int64_t axis) {
  return softmaxImpl(x, y, axis, true);
}

//===----------------------------------------------------------------------===//
// softmax(x * scale + mask) over the last dim
//===----------------------------------------------------------------------===//

Status checkScaledSoftmax(const TensorView &x, const TensorView *mask,
                          const TensorView &y) {
  constexpr std::string_view kOp = "scaled_softmax";
  if (Status s = checkView(kOp, "x", x); !s)
    return s;
  if (Status s = checkView(kOp, "y", y); !s)
    return s;
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + std::string(dtypeName(x.dtype)) +
                         "; expected a float type");
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(kOp, "y is " + std::string(dtypeName(y.dtype)) + " " +
                         shapeStr(y.shape) + ", expected x's " +
                         std::string(dtypeName(x.dtype)) + " " +
                         shapeStr(x.shape));
  if (x.shape.empty())
    return fail(kOp, "x needs at least one dim");
  if (!mask)
    return Status::ok();
  if (Status s = checkView(kOp, "mask", *mask); !s)
    return s;
  if (mask->dtype != x.dtype && mask->dtype != DType::F32)
    return fail(kOp, "mask has dtype " + std::string(dtypeName(mask->dtype)) +
                         "; expected x's or f32");
  bool broadcasts = mask->shape.size() <= x.shape.size();
  for (size_t i = 0; broadcasts && i < mask->shape.size(); ++i) {
    int64_t d = mask->shape[mask->shape.size() - 1 - i],
            e = x.shape[x.shape.size() - 1 - i];
    broadcasts = d == 1 || d == e;
  }
  if (!broadcasts)
    return fail(kOp, "mask " + shapeStr(mask->shape) +
                         " does not broadcast to " + shapeStr(x.shape));
  if (overlaps(mask->data, mask->byteCount(), y.data, y.byteCount()))
    return fail(kOp, "mask overlaps y");
  return Status::ok();
}

Status scaledSoftmax(const TensorView &x, const TensorView *mask,
                     const TensorView &y, float scale) {
  if (Status s = checkScaledSoftmax(x, mask, y); !s)
    return s;
  const int64_t len = x.shape.back();
  const int64_t rows = len ? x.numElements() / len : 0;
  const bool f64 = x.dtype == DType::F64;
  std::vector<int64_t> maskStrides;
  if (mask)
    maskStrides = broadcastStridesOf(mask->shape, x.shape);
  const size_t rank = x.shape.size();
  std::vector<double> row(static_cast<size_t>(len));
  std::vector<float> narrow(static_cast<size_t>(len));
  for (int64_t r = 0; r < rows; ++r) {
    if (f64) {
      const double *src = static_cast<const double *>(x.data) + r * len;
      std::copy(src, src + len, row.data());
    } else {
      toF32(x.dtype,
            static_cast<const char *>(x.data) + r * len * byteSize(x.dtype),
            narrow.data(), len);
      for (int64_t j = 0; j < len; ++j)
        row[j] = narrow[j];
    }
    // Scale (in the compute type), then the mask row.
    for (int64_t j = 0; j < len; ++j)
      row[j] = f64 ? row[j] * scale
                   : static_cast<double>(static_cast<float>(row[j]) * scale);
    if (mask) {
      const int64_t offset = broadcastRowOffset(x.shape, maskStrides, r);
      const int64_t step = maskStrides[rank - 1];
      const size_t elt = byteSize(mask->dtype);
      for (int64_t j = 0; j < len; ++j) {
        const char *at =
            static_cast<const char *>(mask->data) + (offset + j * step) * elt;
        double m;
        if (mask->dtype == DType::F64) {
          std::memcpy(&m, at, sizeof m);
        } else {
          float narrow;
          toF32(mask->dtype, at, &narrow, 1);
          m = narrow;
        }
        row[j] = f64 ? row[j] + m
                     : static_cast<double>(static_cast<float>(row[j]) +
                                           static_cast<float>(m));
      }
    }
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < len; ++j)
      mx = row[j] > mx ? row[j] : mx;
    if (mx == -std::numeric_limits<double>::infinity())
      mx = 0; // every input -inf: shift by 0, not by -inf
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      row[j] =
          f64 ? std::exp(row[j] - mx)
              : static_cast<double>(std::exp(static_cast<float>(row[j] - mx)));
      sum += row[j];
    }
    const double inv = 1.0 / sum;
    if (f64) {
      double *out = static_cast<double *>(y.data) + r * len;
      for (int64_t j = 0; j < len; ++j)
        out[j] = row[j] * inv;
    } else {
      for (int64_t j = 0; j < len; ++j)
        narrow[j] = static_cast<float>(row[j]) * static_cast<float>(inv);
      fromF32(narrow.data(), y.dtype,
              static_cast<char *>(y.data) + r * len * byteSize(y.dtype), len);
    }
  }
  return Status::ok();
}

} // namespace mp::rt::cpu
