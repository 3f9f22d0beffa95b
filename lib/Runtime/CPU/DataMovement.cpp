//===- DataMovement.cpp - transpose, copy, broadcast, tile, concat, ... ---===//
//
// The kernels move elements as bytes. Each first simplifies the problem
// (drops size-1 dims, merges dims that stay adjacent) so that the innermost
// work is a memcpy of a contiguous run wherever the layout allows one.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/DataKernels.h"
#include "mp/Runtime/NarrowTypes.h"

#include "KernelUtil.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace mp::rt::cpu {

using detail::checkView;
using detail::fail;
using detail::shapeStr;
using detail::stridesOf;
using detail::withElementType;

namespace {

/// n copies of the element at `value` (es bytes) at dst.
void fillElements(char *dst, const char *value, int64_t n, size_t es) {
  withElementType(es, [&](auto t) {
    using T = decltype(t);
    T v;
    std::memcpy(&v, value, sizeof(T));
    std::fill_n(reinterpret_cast<T *>(dst), n, v);
  });
}

Status checkInOut(std::string_view op, const TensorView &x,
                  const TensorView &y) {
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + std::string(dtypeName(x.dtype)) +
                        " but y has " + std::string(dtypeName(y.dtype)));
  return Status::ok();
}

/// One loop of a strided copy: `size` iterations, advancing the source by
/// xStride and the destination by yStride elements.
struct Loop {
  int64_t size, xStride, yStride;
};

/// Calls fn(xOffset, yOffset) for every iteration of the nested loops (the
/// last one innermost), offsets in elements from the bases.
template <typename Fn>
void forEachOffset(const std::vector<Loop> &loops, int64_t xBase,
                   int64_t yBase, Fn &&fn) {
  for (const Loop &l : loops)
    if (l.size == 0)
      return;
  std::vector<int64_t> counter(loops.size(), 0);
  int64_t xo = xBase, yo = yBase;
  while (true) {
    fn(xo, yo);
    size_t d = loops.size();
    while (d > 0) {
      --d;
      if (++counter[d] < loops[d].size) {
        xo += loops[d].xStride;
        yo += loops[d].yStride;
        break;
      }
      xo -= loops[d].xStride * (loops[d].size - 1);
      yo -= loops[d].yStride * (loops[d].size - 1);
      counter[d] = 0;
      if (d == 0)
        return;
    }
    if (loops.empty())
      return;
  }
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

/// y[a][b] = x[b][a] for a few columns (a channels-first image's 3 colour
/// planes going channels last): one pass over the rows, the columns
/// unrolled, so that the loop vectorises (the blocked loop below ran such
/// inputs at 0.8 ns an element).
template <int64_t Cols, typename T>
void interleaveColumns(const T *x, T *y, int64_t rows, int64_t ldx,
                       int64_t ldy) {
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = 0; b < Cols; ++b)
      y[a * ldy + b] = x[b * ldx + a];
}

/// A blocked transpose of the 2-D tile `rows` x `cols`: y[a * ldy + b] =
/// x[b * ldx + a] (a < rows, b < cols).
template <typename T>
void transpose2D(const T *x, T *y, int64_t rows, int64_t cols, int64_t ldx,
                 int64_t ldy) {
  switch (cols) {
  case 2:
    return interleaveColumns<2>(x, y, rows, ldx, ldy);
  case 3:
    return interleaveColumns<3>(x, y, rows, ldx, ldy);
  case 4:
    return interleaveColumns<4>(x, y, rows, ldx, ldy);
  default:
    break;
  }
  constexpr int64_t kBlock = 32;
  for (int64_t a0 = 0; a0 < rows; a0 += kBlock) {
    int64_t a1 = std::min(rows, a0 + kBlock);
    for (int64_t b0 = 0; b0 < cols; b0 += kBlock) {
      int64_t b1 = std::min(cols, b0 + kBlock);
      for (int64_t a = a0; a < a1; ++a) {
        T *yRow = y + a * ldy;
        const T *xCol = x + a;
        for (int64_t b = b0; b < b1; ++b)
          yRow[b] = xCol[b * ldx];
      }
    }
  }
}

} // namespace

Status checkTranspose(const TensorView &x, const TensorView &y,
                      const std::vector<int64_t> &permIn,
                      std::vector<int64_t> &perm) {
  constexpr std::string_view op = "transpose";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  const size_t rank = x.shape.size();
  perm = permIn;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank)
    return fail(op, "perm has " + std::to_string(perm.size()) +
                        " entries for x of rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail(op, "perm " + shapeStr(perm) + " is not a permutation of 0.." +
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
  return Status::ok();
}

Status transpose(const TensorView &x, const TensorView &y,
                 const std::vector<int64_t> &permIn) {
  std::vector<int64_t> perm;
  if (Status s = checkTranspose(x, y, permIn, perm); !s)
    return s;
  const size_t rank = x.shape.size();
  const int64_t n = x.numElements();
  if (n == 0)
    return Status::ok();
  const size_t es = byteSize(x.dtype);

  // Collapse: drop size-1 dims, then merge input dims that stay adjacent
  // (consecutive in both x and y) into one.
  std::vector<int64_t> renumber(rank, -1);
  std::vector<int64_t> keptSizes;
  for (size_t d = 0; d < rank; ++d)
    if (x.shape[d] != 1) {
      renumber[d] = static_cast<int64_t>(keptSizes.size());
      keptSizes.push_back(x.shape[d]);
    }
  std::vector<int64_t> order; // kept input dims in y's order
  for (int64_t p : perm)
    if (renumber[p] >= 0)
      order.push_back(renumber[p]);
  // Groups of consecutive input dims, in y's order.
  std::vector<std::pair<int64_t, int64_t>> groups; // first input dim, size
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i] == order[i - 1] + 1)
      groups.back().second *= keptSizes[order[i]];
    else
      groups.push_back({order[i], keptSizes[order[i]]});
  }
  if (groups.size() <= 1) { // the identity permutation of the data
    std::memcpy(y.data, x.data, n * es);
    return Status::ok();
  }
  // Collapsed x: the groups sorted by their first input dim.
  const size_t r = groups.size();
  std::vector<size_t> byInput(r);
  for (size_t i = 0; i < r; ++i)
    byInput[i] = i;
  std::sort(byInput.begin(), byInput.end(), [&](size_t a, size_t b) {
    return groups[a].first < groups[b].first;
  });
  Shape xs(r), ys(r);
  std::vector<int64_t> cperm(r); // y dim i = collapsed x dim cperm[i]
  for (size_t k = 0; k < r; ++k) {
    xs[k] = groups[byInput[k]].second;
    cperm[byInput[k]] = static_cast<int64_t>(k);
  }
  for (size_t i = 0; i < r; ++i)
    ys[i] = xs[cperm[i]];
  std::vector<int64_t> xStride = stridesOf(xs), yStride = stridesOf(ys);

  const char *xb = static_cast<const char *>(x.data);
  char *yb = static_cast<char *>(y.data);
  if (cperm[r - 1] == static_cast<int64_t>(r - 1)) {
    // x's innermost dim stays innermost: copy contiguous runs.
    std::vector<Loop> loops;
    for (size_t i = 0; i + 1 < r; ++i)
      loops.push_back({ys[i], xStride[cperm[i]], yStride[i]});
    const size_t run = static_cast<size_t>(xs[r - 1]) * es;
    forEachOffset(loops, 0, 0, [&](int64_t xo, int64_t yo) {
      std::memcpy(yb + yo * es, xb + xo * es, run);
    });
    return Status::ok();
  }
  // Batched 2-D transposes: y's innermost dim is x's dim p, and x's
  // innermost dim is y's dim q.
  const int64_t p = cperm[r - 1];
  size_t q = 0;
  while (cperm[q] != static_cast<int64_t>(r - 1))
    ++q;
  std::vector<Loop> loops;
  for (size_t i = 0; i + 1 < r; ++i)
    if (i != q)
      loops.push_back({ys[i], xStride[cperm[i]], yStride[i]});
  withElementType(es, [&](auto t) {
    using T = decltype(t);
    const T *xt = reinterpret_cast<const T *>(xb);
    T *yt = reinterpret_cast<T *>(yb);
    const int64_t rows = ys[q], cols = ys[r - 1];
    auto tile = [&](int64_t xo, int64_t yo) {
      transpose2D(xt + xo, yt + yo, rows, cols, xStride[p], yStride[q]);
    };
    if (!loops.empty()) {
      // The outermost batch loop's iterations on the CPU threads (each
      // writes its own part of y).
      const Loop outer = loops.front();
      const std::vector<Loop> inner(loops.begin() + 1, loops.end());
      detail::parallelItems(outer.size, n / outer.size, [&](int64_t i) {
        forEachOffset(inner, i * outer.xStride, i * outer.yStride, tile);
      });
      return;
    }
    // One 2-D transpose: bands of 32 of y's rows on the threads.
    const int64_t bands = (rows + 31) / 32;
    detail::parallelItems(bands, 32 * cols, [&](int64_t band) {
      const int64_t a0 = band * 32;
      transpose2D(xt + a0, yt + a0 * yStride[q],
                  std::min<int64_t>(32, rows - a0), cols, xStride[p],
                  yStride[q]);
    });
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Copy, broadcast, tile, concat
//===----------------------------------------------------------------------===//

Status checkCopy(const TensorView &x, const TensorView &y) {
  constexpr std::string_view op = "copy";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  if (x.numElements() != y.numElements())
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different numbers of elements");
  return Status::ok();
}

Status copy(const TensorView &x, const TensorView &y) {
  if (Status s = checkCopy(x, y); !s)
    return s;
  if (x.data != y.data && x.numElements() > 0)
    std::memmove(y.data, x.data, x.byteCount());
  return Status::ok();
}

namespace {

/// The broadcast recursion over collapsed dims: `bcast[d]` says whether x's
/// dim d is 1 (replicated), `yBlock[d]` is the bytes of y from dim d on and
/// `xBlock[d]` of x.
struct Expander {
  std::vector<int64_t> size;
  std::vector<bool> bcast;
  std::vector<int64_t> xBlock, yBlock;
  size_t es;

  void run(size_t d, const char *x, char *y) const {
    const size_t r = size.size();
    if (d == r) {
      std::memcpy(y, x, es);
      return;
    }
    if (!bcast[d]) {
      if (d + 1 == r) { // contiguous in both
        std::memcpy(y, x, static_cast<size_t>(yBlock[d]));
        return;
      }
      for (int64_t i = 0; i < size[d]; ++i)
        run(d + 1, x + i * xBlock[d + 1], y + i * yBlock[d + 1]);
      return;
    }
    if (d + 1 == r) { // one element repeated
      fillElements(y, x, size[d], es);
      return;
    }
    // Write the first block, then replicate it.
    run(d + 1, x, y);
    const size_t block = static_cast<size_t>(yBlock[d + 1]);
    for (int64_t i = 1; i < size[d]; ++i)
      std::memcpy(y + i * block, y, block);
  }
};

} // namespace

Status checkBroadcast(const TensorView &x, const TensorView &y) {
  constexpr std::string_view op = "broadcast";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  const size_t r = y.shape.size();
  if (x.shape.size() > r)
    return fail(op, "x " + shapeStr(x.shape) + " has a higher rank than y " +
                        shapeStr(y.shape));
  Shape xAligned(r - x.shape.size(), 1);
  xAligned.insert(xAligned.end(), x.shape.begin(), x.shape.end());
  for (size_t d = 0; d < r; ++d)
    if (xAligned[d] != y.shape[d] && xAligned[d] != 1)
      return fail(op, "x " + shapeStr(x.shape) +
                          " does not broadcast to y " + shapeStr(y.shape));
  return Status::ok();
}

Status broadcast(const TensorView &x, const TensorView &y) {
  if (Status s = checkBroadcast(x, y); !s)
    return s;
  const size_t r = y.shape.size();
  Shape xAligned(r - x.shape.size(), 1);
  xAligned.insert(xAligned.end(), x.shape.begin(), x.shape.end());
  if (y.numElements() == 0)
    return Status::ok();
  const size_t es = byteSize(x.dtype);
  // Collapse: drop dims of size 1 in y, merge neighbours of the same kind.
  Expander e;
  e.es = es;
  for (size_t d = 0; d < r; ++d) {
    if (y.shape[d] == 1)
      continue;
    bool b = xAligned[d] == 1;
    if (!e.size.empty() && e.bcast.back() == b)
      e.size.back() *= y.shape[d];
    else {
      e.size.push_back(y.shape[d]);
      e.bcast.push_back(b);
    }
  }
  const size_t cr = e.size.size();
  e.xBlock.assign(cr + 1, static_cast<int64_t>(es));
  e.yBlock.assign(cr + 1, static_cast<int64_t>(es));
  for (size_t d = cr; d-- > 0;) {
    e.yBlock[d] = e.yBlock[d + 1] * e.size[d];
    e.xBlock[d] = e.xBlock[d + 1] * (e.bcast[d] ? 1 : e.size[d]);
  }
  e.run(0, static_cast<const char *>(x.data), static_cast<char *>(y.data));
  return Status::ok();
}

Status checkTile(const TensorView &x, const TensorView &y) {
  constexpr std::string_view op = "tile";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  const size_t r = x.shape.size();
  if (y.shape.size() != r)
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different ranks");
  for (size_t d = 0; d < r; ++d) {
    bool ok = x.shape[d] == 0 ? y.shape[d] == 0 : y.shape[d] % x.shape[d] == 0;
    if (!ok)
      return fail(op, "y " + shapeStr(y.shape) +
                          " is not x " + shapeStr(x.shape) +
                          " repeated a whole number of times along dim " +
                          std::to_string(d));
  }
  return Status::ok();
}

Status tile(const TensorView &x, const TensorView &y) {
  if (Status s = checkTile(x, y); !s)
    return s;
  const size_t r = x.shape.size();
  if (y.numElements() == 0)
    return Status::ok();
  const size_t es = byteSize(x.dtype);
  std::vector<int64_t> xBlock(r + 1, static_cast<int64_t>(es)),
      yBlock(r + 1, static_cast<int64_t>(es));
  // Dims from `plainFrom` on are not repeated: x's block there is y's.
  size_t plainFrom = r;
  for (size_t d = r; d-- > 0;) {
    xBlock[d] = xBlock[d + 1] * x.shape[d];
    yBlock[d] = yBlock[d + 1] * y.shape[d];
    if (plainFrom == d + 1 && x.shape[d] == y.shape[d])
      plainFrom = d;
  }
  // Recursion: write x's part of the block, then replicate it.
  auto run = [&](auto &self, size_t d, const char *xp, char *yp) -> void {
    if (d >= plainFrom) {
      std::memcpy(yp, xp, static_cast<size_t>(xBlock[d]));
      return;
    }
    for (int64_t i = 0; i < x.shape[d]; ++i)
      self(self, d + 1, xp + i * xBlock[d + 1], yp + i * yBlock[d + 1]);
    const size_t chunk = static_cast<size_t>(x.shape[d] * yBlock[d + 1]);
    const int64_t repeats = y.shape[d] / x.shape[d];
    for (int64_t k = 1; k < repeats; ++k)
      std::memcpy(yp + k * chunk, yp, chunk);
  };
  run(run, 0, static_cast<const char *>(x.data), static_cast<char *>(y.data));
  return Status::ok();
}

Status checkConcat(const std::vector<TensorView> &inputs, const TensorView &y,
                   int64_t &axis) {
  constexpr std::string_view op = "concat";
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (inputs.empty())
    return fail(op, "needs at least one input");
  const int64_t r = static_cast<int64_t>(y.shape.size());
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for y " +
                        shapeStr(y.shape));
  if (axis < 0)
    axis += r;
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView &in = inputs[i];
    std::string name = "input " + std::to_string(i);
    if (Status s = checkView(op, name, in); !s)
      return s;
    if (in.dtype != y.dtype)
      return fail(op, name + " has dtype " + std::string(dtypeName(in.dtype)) +
                          " but y has " + std::string(dtypeName(y.dtype)));
    bool shapeOk = static_cast<int64_t>(in.shape.size()) == r;
    for (int64_t d = 0; shapeOk && d < r; ++d)
      shapeOk = d == axis || in.shape[d] == y.shape[d];
    if (!shapeOk)
      return fail(op, name + " " + shapeStr(in.shape) +
                          " does not match y " + shapeStr(y.shape) +
                          " outside axis " + std::to_string(axis));
    total += in.shape[axis];
  }
  if (total != y.shape[axis])
    return fail(op, "the inputs add up to " + std::to_string(total) +
                        " along axis " + std::to_string(axis) + ", but y " +
                        shapeStr(y.shape) + " has " +
                        std::to_string(y.shape[axis]));
  return Status::ok();
}

Status concat(const std::vector<TensorView> &inputs, const TensorView &y,
              int64_t axis) {
  if (Status s = checkConcat(inputs, y, axis); !s)
    return s;
  const int64_t r = static_cast<int64_t>(y.shape.size());
  if (y.numElements() == 0)
    return Status::ok();
  const size_t es = byteSize(y.dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= y.shape[d];
  for (int64_t d = axis + 1; d < r; ++d)
    inner *= y.shape[d];
  const size_t yRow = static_cast<size_t>(y.shape[axis] * inner) * es;
  char *yb = static_cast<char *>(y.data);
  // Each y row (the inputs' pieces side by side) is written whole by one
  // thread: DenseNet's channels-last concatenations are thousands of rows of
  // a few hundred bytes per input.
  detail::parallelItems(outer, y.shape[axis] * inner, [&](int64_t o) {
    size_t column = 0; // byte offset of the current input in a y row
    for (const TensorView &in : inputs) {
      const size_t row = static_cast<size_t>(in.shape[axis] * inner) * es;
      if (row != 0)
        std::memcpy(yb + o * yRow + column,
                    static_cast<const char *>(in.data) + o * row, row);
      column += row;
    }
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

Status checkSlice(const TensorView &x, const TensorView &y,
                  const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &givenSteps) {
  constexpr std::string_view op = "slice";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  const size_t r = x.shape.size();
  if (y.shape.size() != r)
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different ranks");
  if (starts.size() != r || givenSteps.size() != r)
    return fail(op, "starts " + shapeStr(starts) + " and steps " +
                        shapeStr(givenSteps) + " need one entry per dim of x " +
                        shapeStr(x.shape));
  for (size_t d = 0; d < r; ++d) {
    if (givenSteps[d] == 0)
      return fail(op, "step of dim " + std::to_string(d) + " is 0");
    if (y.shape[d] == 0)
      continue;
    int64_t span, last;
    bool overflow =
        __builtin_mul_overflow(y.shape[d] - 1, givenSteps[d], &span) ||
        __builtin_add_overflow(starts[d], span, &last);
    if (starts[d] < 0 || starts[d] >= x.shape[d] || overflow || last < 0 ||
        last >= x.shape[d])
      return fail(op, "dim " + std::to_string(d) + ": " +
                          std::to_string(y.shape[d]) +
                          " elements from start " + std::to_string(starts[d]) +
                          " with step " + std::to_string(givenSteps[d]) +
                          " do not lie in x " + shapeStr(x.shape));
  }
  return Status::ok();
}

Status slice(const TensorView &x, const TensorView &y,
             const std::vector<int64_t> &starts,
             const std::vector<int64_t> &givenSteps) {
  if (Status s = checkSlice(x, y, starts, givenSteps); !s)
    return s;
  const size_t r = x.shape.size();
  if (y.numElements() == 0)
    return Status::ok();
  // A dim that takes one element ignores its step (any step passes the check
  // above; a huge one would overflow the strides below).
  std::vector<int64_t> steps(givenSteps);
  for (size_t d = 0; d < r; ++d)
    if (y.shape[d] == 1)
      steps[d] = 1;
  const size_t es = byteSize(x.dtype);
  const std::vector<int64_t> xStride = stridesOf(x.shape),
                             yStride = stridesOf(y.shape);
  int64_t xBase = 0;
  for (size_t d = 0; d < r; ++d)
    xBase += starts[d] * xStride[d];
  const char *xb = static_cast<const char *>(x.data);
  char *yb = static_cast<char *>(y.data);
  if (r == 0) {
    std::memcpy(yb, xb, es);
    return Status::ok();
  }
  // The contiguous suffix: dims from k on are read whole with step 1 (dim k
  // itself with step 1 from any start), so each y row there is one run.
  size_t k = r;
  if (steps[r - 1] == 1) {
    k = r - 1;
    while (k > 0 && y.shape[k] == x.shape[k] && steps[k - 1] == 1)
      --k;
  }
  std::vector<Loop> loops;
  for (size_t d = 0; d < std::min(k, r - 1); ++d)
    loops.push_back({y.shape[d], steps[d] * xStride[d], yStride[d]});
  if (k < r) {
    const size_t run = static_cast<size_t>(y.shape[k] * yStride[k]) * es;
    forEachOffset(loops, xBase, 0, [&](int64_t xo, int64_t yo) {
      std::memcpy(yb + yo * es, xb + xo * es, run);
    });
    return Status::ok();
  }
  // The last dim is strided: copy it element by element.
  const int64_t count = y.shape[r - 1], step = steps[r - 1];
  withElementType(es, [&](auto t) {
    using T = decltype(t);
    const T *xt = reinterpret_cast<const T *>(xb);
    T *yt = reinterpret_cast<T *>(yb);
    forEachOffset(loops, xBase, 0, [&](int64_t xo, int64_t yo) {
      const T *src = xt + xo;
      T *dst = yt + yo;
      for (int64_t i = 0; i < count; ++i)
        dst[i] = src[i * step];
    });
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

bool parsePadMode(const std::string &name, PadMode &mode) {
  static constexpr std::pair<std::string_view, PadMode> kNames[] = {
      {"constant", PadMode::Constant},
      {"reflect", PadMode::Reflect},
      {"edge", PadMode::Edge},
      {"wrap", PadMode::Wrap},
  };
  return detail::parseName(name, kNames, mode);
}

namespace {

/// `value` as one element of dtype t, in `out` (8 bytes).
Status constantElement(DType t, double value, unsigned char *out) {
  auto integer = [&](auto type) -> Status {
    using T = decltype(type);
    // Truncation toward zero; the value must fit T: [-2^digits, 2^digits)
    // for signed T, [0, 2^digits) for unsigned (both bounds exact doubles).
    const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
    const double lowest = std::numeric_limits<T>::is_signed ? -limit : 0.0;
    double v = std::trunc(value);
    if (!(v >= lowest && v < limit)) // also rejects NaN
      return fail("pad", "the constant " + std::to_string(value) +
                             " does not fit dtype " +
                             std::string(dtypeName(t)));
    T r = static_cast<T>(v);
    std::memcpy(out, &r, sizeof r);
    return Status::ok();
  };
  switch (t) {
  case DType::F32: {
    float f = static_cast<float>(value);
    std::memcpy(out, &f, sizeof f);
    return Status::ok();
  }
  case DType::F64: std::memcpy(out, &value, sizeof value); return Status::ok();
  case DType::F16: {
    Half h = toHalf(value);
    std::memcpy(out, &h, sizeof h);
    return Status::ok();
  }
  case DType::BF16: {
    BFloat16 h = toBFloat16(value);
    std::memcpy(out, &h, sizeof h);
    return Status::ok();
  }
  case DType::Bool: out[0] = value != 0.0 ? 1 : 0; return Status::ok();
  case DType::U8: return integer(uint8_t{});
  case DType::I8: return integer(int8_t{});
  case DType::U16: return integer(uint16_t{});
  case DType::I16: return integer(int16_t{});
  case DType::U32: return integer(uint32_t{});
  case DType::I32: return integer(int32_t{});
  case DType::U64: return integer(uint64_t{});
  case DType::I64: return integer(int64_t{});
  default: // the narrow types: rounded as kernel.cast does
    out[0] = narrow::encodeNarrow(static_cast<int32_t>(t), value);
    return Status::ok();
  }
  return fail("pad", "unsupported dtype");
}

} // namespace

Result<PadGeometry> padGeometry(const TensorView &x, const TensorView &y,
                                PadMode mode, const std::vector<int64_t> &pads,
                                double value) {
  constexpr std::string_view op = "pad";
  if (Status s = checkInOut(op, x, y); !s)
    return s;
  const size_t r = x.shape.size();
  if (y.shape.size() != r)
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different ranks");
  if (pads.size() != 2 * r)
    return fail(op, "pads " + shapeStr(pads) + " needs " +
                        std::to_string(2 * r) + " entries (begins, ends) for x " +
                        shapeStr(x.shape));
  // Per dim: the part of x kept after cropping, [lo, lo + len), and the
  // positive pads before it.
  PadGeometry g;
  std::vector<int64_t> &lo = g.lo, &len = g.len, &before = g.before;
  lo.resize(r);
  len.resize(r);
  before.resize(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t b = pads[d], e = pads[r + d];
    int64_t expected;
    if (__builtin_add_overflow(x.shape[d], b, &expected) ||
        __builtin_add_overflow(expected, e, &expected) ||
        expected != y.shape[d])
      return fail(op, "y " + shapeStr(y.shape) + " is not x " +
                          shapeStr(x.shape) + " padded by " + shapeStr(pads));
    lo[d] = std::min<int64_t>(std::max<int64_t>(-b, 0), x.shape[d]);
    len[d] = std::max<int64_t>(
        x.shape[d] - lo[d] - std::max<int64_t>(-e, 0), 0);
    before[d] = std::max<int64_t>(b, 0);
  }
  if (mode == PadMode::Constant)
    if (Status s = constantElement(x.dtype, value, g.constant); !s)
      return s;
  if (y.numElements() == 0 || mode == PadMode::Constant)
    return g;
  for (size_t d = 0; d < r; ++d)
    if (len[d] == 0)
      return fail(op, "dim " + std::to_string(d) + " of x " +
                          shapeStr(x.shape) +
                          " is empty after cropping; only constant mode can "
                          "pad it");
  return g;
}

Status pad(const TensorView &x, const TensorView &y, PadMode mode,
           const std::vector<int64_t> &pads, double value) {
  Result<PadGeometry> geometry = padGeometry(x, y, mode, pads, value);
  if (!geometry)
    return geometry.status();
  const std::vector<int64_t> &lo = geometry->lo, &len = geometry->len,
                             &before = geometry->before;
  const unsigned char *constant = geometry->constant;
  const size_t r = x.shape.size();
  if (y.numElements() == 0)
    return Status::ok();
  const size_t es = byteSize(x.dtype);
  const char *xb = static_cast<const char *>(x.data);
  char *yb = static_cast<char *>(y.data);
  const std::vector<int64_t> xStride = stridesOf(x.shape),
                             yStride = stridesOf(y.shape);

  if (mode == PadMode::Constant) {
    fillElements(yb, reinterpret_cast<const char *>(constant), y.numElements(),
                 es);
    if (r == 0) {
      std::memcpy(yb, xb, es);
      return Status::ok();
    }
    for (size_t d = 0; d < r; ++d)
      if (len[d] == 0)
        return Status::ok(); // nothing of x is left
    int64_t xBase = 0, yBase = 0;
    std::vector<Loop> loops;
    for (size_t d = 0; d < r; ++d) {
      xBase += lo[d] * xStride[d];
      yBase += before[d] * yStride[d];
      if (d + 1 < r)
        loops.push_back({len[d], xStride[d], yStride[d]});
    }
    const size_t run = static_cast<size_t>(len[r - 1]) * es;
    forEachOffset(loops, xBase, yBase, [&](int64_t xo, int64_t yo) {
      std::memcpy(yb + yo * es, xb + xo * es, run);
    });
    return Status::ok();
  }

  // Reflect, edge, wrap: every y index maps to an index of x.
  std::vector<std::vector<int64_t>> source(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t n = len[d]; // > 0 (padGeometry)
    source[d].resize(static_cast<size_t>(y.shape[d]));
    for (int64_t i = 0; i < y.shape[d]; ++i) {
      int64_t j = i - before[d];
      if (j < 0 || j >= n) {
        if (mode == PadMode::Edge) {
          j = j < 0 ? 0 : n - 1;
        } else if (mode == PadMode::Wrap) {
          j %= n;
          if (j < 0)
            j += n;
        } else if (n == 1) { // reflect of a single element
          j = 0;
        } else { // reflect: period 2(n-1)
          const int64_t period = 2 * (n - 1);
          j %= period;
          if (j < 0)
            j += period;
          if (j >= n)
            j = period - j;
        }
      }
      source[d][i] = lo[d] + j;
    }
  }
  if (r == 0) {
    std::memcpy(yb, xb, es);
    return Status::ok();
  }
  // Rows of the last dim: the middle part is a contiguous run of x.
  const int64_t rowLen = y.shape[r - 1];
  const int64_t midBegin = before[r - 1];
  const int64_t midLen =
      std::min<int64_t>(len[r - 1], std::max<int64_t>(rowLen - midBegin, 0));
  const std::vector<int64_t> &lastSource = source[r - 1];
  std::vector<int64_t> counter(r, 0);
  withElementType(es, [&](auto t) {
    using T = decltype(t);
    const T *xt = reinterpret_cast<const T *>(xb);
    T *yt = reinterpret_cast<T *>(yb);
    const int64_t rows = y.numElements() / rowLen;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t xo = 0;
      for (size_t d = 0; d + 1 < r; ++d)
        xo += source[d][counter[d]] * xStride[d];
      T *dst = yt + row * rowLen;
      const T *src = xt + xo;
      for (int64_t i = 0; i < midBegin && i < rowLen; ++i)
        dst[i] = src[lastSource[i]];
      if (midLen > 0)
        std::memcpy(dst + midBegin, src + lastSource[midBegin],
                    static_cast<size_t>(midLen) * sizeof(T));
      for (int64_t i = midBegin + midLen; i < rowLen; ++i)
        dst[i] = src[lastSource[i]];
      for (size_t d = r - 1; d-- > 0;) {
        if (++counter[d] < y.shape[d])
          break;
        counter[d] = 0;
      }
    }
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
