//===- OneDnnAttention.cpp - kernel.attention on oneDNN matmuls -----------===//
//
// The fused attention call in blocks of (batch, head) problems: each block's
// Q, K and V are gathered from their strided views into dense scratch, the
// scores S = Q K^T come from one batched oneDNN matmul (16-bit inputs where
// the buffers are bf16, or f16 and the CPU has f16 kernels: exact products,
// f32 sums), the softmax runs over S's rows in f32 with the vectorised exp
// (VectorMath.h), P V is a second batched matmul in f32 (P is never rounded
// to 16 bits), and O is scattered into its view, rounded once. A block holds
// as many problems as fit kScratchBudget, so the scores of a long sequence
// never all live at once. Where the problems split evenly over the threads,
// each thread instead runs blocks of its own, with one-thread primitives, in
// one parallel region for the call: ViT-B/16's attention 12.9 -> 9.4 ms,
// the BERT-style encoder's 0.047 -> 0.037 ms (a block's scores stay in its
// thread's cache, and no thread waits at the five other parallel loops of a
// block that every thread shares).
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/VectorMath.h"
#include "mp/Runtime/Half.h"

#include "../Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <type_traits>

namespace mp::rt::cpu::onednn {

namespace {

using dt = dnnl::memory::data_type;

/// The scratch one block may take (scores, gathered operands, output).
constexpr size_t kScratchBudget = size_t(16) << 20;

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

template <typename T>
inline void gatherRow(const T *src, int64_t stride, T *dst, int64_t n) {
  if (stride == 1) {
    std::copy(src, src + n, dst);
    return;
  }
  for (int64_t c = 0; c < n; ++c)
    dst[c] = src[c * stride];
}

template <typename T>
inline void widenRow(const T *src, int64_t stride, float *dst, int64_t n) {
  // A dense row: the vectorised conversions (F16C for f16).
  if (stride == 1) {
    const auto *bits = reinterpret_cast<const uint16_t *>(src);
    if constexpr (std::is_same_v<T, Half>)
      convertF16ToF32(bits, dst, static_cast<size_t>(n));
    else
      convertBF16ToF32(bits, dst, static_cast<size_t>(n));
    return;
  }
  for (int64_t c = 0; c < n; ++c)
    dst[c] = toFloat(src[c * stride]);
}

/// n elements of a float buffer from element `from`, `stride` apart, as f32.
inline void gatherRowAsFloat(const TensorView &t, int64_t from, int64_t stride,
                             float *dst, int64_t n) {
  switch (t.dtype) {
  case DType::F16:
    widenRow(t.as<const Half>() + from, stride, dst, n);
    break;
  case DType::BF16:
    widenRow(t.as<const BFloat16>() + from, stride, dst, n);
    break;
  default:
    gatherRow(t.as<const float>() + from, stride, dst, n);
  }
}

template <typename T>
inline void addRow(const T *src, int64_t stride, float *dst, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    if constexpr (std::is_same_v<T, float>)
      dst[c] += src[c * stride];
    else
      dst[c] += toFloat(src[c * stride]);
  }
}

/// dst[c] += element `from + c * stride` of a float buffer, c < n.
inline void addRowAsFloat(const TensorView &t, int64_t from, int64_t stride,
                          float *dst, int64_t n) {
  switch (t.dtype) {
  case DType::F16:
    addRow(t.as<const Half>() + from, stride, dst, n);
    break;
  case DType::BF16:
    addRow(t.as<const BFloat16>() + from, stride, dst, n);
    break;
  default:
    addRow(t.as<const float>() + from, stride, dst, n);
  }
}

/// n f32 values rounded once into a float buffer from element `to`,
/// `stride` apart.
inline void scatterRow(const float *src, const TensorView &t, int64_t to,
                       int64_t stride, int64_t n) {
  switch (t.dtype) {
  case DType::F16:
    if (stride == 1)
      convertF32ToF16(src, reinterpret_cast<uint16_t *>(t.as<Half>() + to),
                      static_cast<size_t>(n));
    else
      for (int64_t c = 0; c < n; ++c)
        t.as<Half>()[to + c * stride] = toHalf(src[c]);
    break;
  case DType::BF16:
    if (stride == 1)
      convertF32ToBF16(src, reinterpret_cast<uint16_t *>(t.as<BFloat16>() + to),
                       static_cast<size_t>(n));
    else
      for (int64_t c = 0; c < n; ++c)
        t.as<BFloat16>()[to + c * stride] = toBFloat16(src[c]);
    break;
  default:
    for (int64_t c = 0; c < n; ++c)
      t.as<float>()[to + c * stride] = src[c];
  }
}

/// The two matmuls of a block of `problems` (batch, head) pairs.
struct BlockPrimitives {
  dnnl::matmul scores, values;
  dnnl::memory::desc qDesc, kDesc, sDesc, pDesc, vDesc, oDesc;
  size_t scratchpad = 0; ///< the larger of the two matmuls' scratchpads
};

/// The scratch of a block that one thread runs, where it holds more than
/// one problem: about a core's share of L2 (ViT-B/16's attention: blocks of
/// 2 problems, 0.72 MB, 9.2-9.6 ms; of 1, 9.6-10.3; of 6, 9.4-10.8).
constexpr size_t kThreadBlockBytes = size_t(1) << 20;

/// How many (batch, head) problems each thread takes at a time when the
/// call's blocks run one per thread (0: they do not): the most, up to an
/// even share, whose scratch (`pairBytes` each) fits the thread's part of
/// the budget and, for more than one problem, kThreadBlockBytes, such that
/// the blocks split evenly over the threads or are at least four per thread
/// (none waits long for the others).
int64_t problemsPerThreadBlock(int64_t problems, int threads, size_t pairBytes,
                               size_t budget) {
  if (threads < 2 || problems < threads)
    return 0;
  const size_t share = budget / static_cast<size_t>(threads);
  for (int64_t g = problems / threads; g >= 1; --g) {
    const size_t bytes = static_cast<size_t>(g) * pairBytes;
    if (problems % g != 0 || bytes > share ||
        (g > 1 && bytes > kThreadBlockBytes))
      continue;
    const int64_t blocks = problems / g;
    if (blocks % threads == 0 || blocks >= 4 * threads)
      return g;
  }
  return 0;
}

class AttentionCall final : public PreparedCall {
public:
  AttentionCall(const TensorView &q, const TensorView &k, const TensorView &v,
                const TensorView *mask, const TensorView &o,
                const AttentionOptions &options)
      : q_(q), k_(k), v_(v), o_(o), options_(options), stream_(engine()) {
    if (mask)
      mask_ = *mask;
    hasMask_ = mask != nullptr;
  }

  /// Makes the primitives; false (with `why`) when oneDNN has none worth
  /// taking.
  bool prepare(std::string &why) {
    const AttentionShape &n = options_.shape;
    // Q and K stay 16-bit when they are and oneDNN has a matmul of theirs
    // here (narrowIsNative), else f32 copies.
    qkType_ = dt::f32;
    if (q_.dtype == DType::BF16 && k_.dtype == DType::BF16 &&
        narrowIsNative(DType::BF16))
      qkType_ = dt::bf16;
    if (q_.dtype == DType::F16 && k_.dtype == DType::F16 &&
        narrowIsNative(DType::F16))
      qkType_ = dt::f16;
    const int64_t pairs = n.batch * n.heads;
    const int threads = cpuThreads();
    if (int64_t g = problemsPerThreadBlock(pairs, threads, pairBytes(),
                                           kScratchBudget)) {
      {
        OneThreadPrimitives oneThread;
        if (!makeBlock(g, full_, why))
          return false;
      }
      block_ = g;
      slotBytes_ = align64(g * pairBytes() + full_.scratchpad + 64);
      slots_.resize(static_cast<size_t>(threads));
      for (dnnl::stream &slot : slots_)
        slot = dnnl::stream(engine());
      scratchBytes_ = slotBytes_ * slots_.size();
      name_ = scoresName_ + ", own vectorised softmax, f32 P V, " +
              "blocks of " + std::to_string(g) + " (batch, head) per thread";
      return true;
    }
    block_ = std::max<int64_t>(
        1, std::min<int64_t>(pairs, kScratchBudget /
                                        std::max<size_t>(1, pairBytes())));
    if (!makeBlock(block_, full_, why))
      return false;
    if (pairs % block_ && !makeBlock(pairs % block_, rest_, why))
      return false;
    scratchBytes_ = block_ * pairBytes() + full_.scratchpad + 64;
    if (pairs % block_)
      scratchBytes_ =
          std::max(scratchBytes_, block_ * pairBytes() + rest_.scratchpad + 64);
    name_ = scoresName_ + ", own vectorised softmax, f32 P V";
    return true;
  }

  size_t scratchBytes() const override { return scratchBytes_; }
  const std::string &implementation() const override { return name_; }

  Status run(void *scratch) override {
    const AttentionShape &n = options_.shape;
    const int64_t pairs = n.batch * n.heads;
    if (!slots_.empty())
      return runBlocksPerThread(pairs / block_, static_cast<char *>(scratch));
    try {
      for (int64_t first = 0; first < pairs; first += block_) {
        int64_t count = std::min(block_, pairs - first);
        runBlock(first, count, count == block_ ? full_ : rest_,
                 static_cast<char *>(scratch), stream_);
      }
    } catch (const dnnl::error &e) {
      return Status::error(name_ + ": " + e.what());
    }
    return Status::ok();
  }

private:
  /// `blocks` blocks of block_ problems, one per thread at a time, each in
  /// its thread's part of the scratch (runBlock's parallel loops run inline
  /// in the region).
  Status runBlocksPerThread(int64_t blocks, char *scratch) {
    std::mutex failure;
    std::string error;
    auto run = [&](int64_t block, int slot) {
      const size_t s = static_cast<size_t>(slot);
      try {
        runBlock(block * block_, block_, full_, scratch + slotBytes_ * s,
                 slots_[s]);
      } catch (const dnnl::error &e) {
        std::lock_guard<std::mutex> lock(failure);
        error = e.what();
      }
    };
    detail::parallelSlots(blocks, static_cast<int>(slots_.size()), run);
    if (!error.empty())
      return Status::error(name_ + ": " + error);
    return Status::ok();
  }

  size_t qkBytes() const { return qkType_ == dt::f32 ? 4 : 2; }

  /// Scratch bytes per (batch, head) problem: Q, K (qkType), V, S and O
  /// (f32), each region 64-byte aligned per block.
  size_t pairBytes() const {
    const AttentionShape &n = options_.shape;
    return align64(n.queries * n.headDim * qkBytes()) +
           align64(n.keys * n.headDim * qkBytes()) +
           align64(n.keys * n.valueDim * 4) + align64(n.queries * n.keys * 4) +
           align64(n.queries * n.valueDim * 4);
  }

  bool makeBlock(int64_t problems, BlockPrimitives &p, std::string &why) {
    const AttentionShape &n = options_.shape;
    const int64_t g = problems;
    auto attr = userScratchpad();
    p.qDesc = plainDesc({g, n.queries, n.headDim}, qkType_);
    // K^T as matmul weights [g, D, Lk] over dense K [g, Lk, D].
    p.kDesc = dnnl::memory::desc({g, n.headDim, n.keys}, qkType_,
                                 {n.keys * n.headDim, 1, n.headDim});
    p.sDesc = plainDesc({g, n.queries, n.keys}, dt::f32);
    p.pDesc = p.sDesc;
    p.vDesc = plainDesc({g, n.keys, n.valueDim}, dt::f32);
    p.oDesc = plainDesc({g, n.queries, n.valueDim}, dt::f32);
    dnnl::matmul::primitive_desc scores;
    try {
      scores = dnnl::matmul::primitive_desc(engine(), p.qDesc, p.kDesc, p.sDesc,
                                            attr);
    } catch (const dnnl::error &) {
      if (qkType_ == dt::f32)
        throw;
      // No 16-bit matmul on this CPU: f32 copies of Q and K instead.
      qkType_ = dt::f32;
      return makeBlock(problems, p, why);
    }
    dnnl::matmul::primitive_desc values(engine(), p.pDesc, p.vDesc, p.oDesc,
                                        attr);
    if (isReferenceImplementation(scores) && qkType_ != dt::f32) {
      // Only oneDNN's reference 16-bit matmul: f32 copies instead.
      qkType_ = dt::f32;
      return makeBlock(problems, p, why);
    }
    if (isReferenceImplementation(scores) ||
        isReferenceImplementation(values)) {
      why = "oneDNN has only its reference matmul for attention's blocks";
      return false;
    }
    scoresName_ = implementationName(scores);
    p.scores = dnnl::matmul(scores);
    p.values = dnnl::matmul(values);
    p.scratchpad = std::max(scores.scratchpad_desc().get_size(),
                            values.scratchpad_desc().get_size());
    return true;
  }

  void runBlock(int64_t first, int64_t count, BlockPrimitives &p, char *scratch,
                dnnl::stream &stream) {
    const AttentionShape &n = options_.shape;
    const AttentionOptions &a = options_;
    char *at = scratch;
    auto take = [&](size_t bytes) {
      char *region = at;
      at += align64(bytes);
      return region;
    };
    char *qData = take(count * n.queries * n.headDim * qkBytes());
    char *kData = take(count * n.keys * n.headDim * qkBytes());
    float *vData =
        reinterpret_cast<float *>(take(count * n.keys * n.valueDim * 4));
    float *sData =
        reinterpret_cast<float *>(take(count * n.queries * n.keys * 4));
    float *oData =
        reinterpret_cast<float *>(take(count * n.queries * n.valueDim * 4));
    char *pad = take(p.scratchpad);

    // Gather Q, K (as qkType) and V (f32) densely, one problem per item.
    const bool keep16 = qkType_ != dt::f32;
    detail::parallelItems(
        count, (n.queries + n.keys) * (n.headDim + n.valueDim),
        [&](int64_t item) {
          const int64_t pair = first + item;
          const int64_t b = pair / n.heads, h = pair % n.heads;
          auto gather = [&](const TensorView &t, const AttentionView &view,
                            int64_t rows, int64_t cols, char *dst,
                            bool keep16Bits) {
            for (int64_t r = 0; r < rows; ++r) {
              const int64_t from = view.at(b, h, r, 0);
              const int64_t to = (item * rows + r) * cols;
              if (keep16Bits)
                gatherRow(static_cast<const uint16_t *>(t.data) + from,
                          view.strides[3],
                          reinterpret_cast<uint16_t *>(dst) + to, cols);
              else
                gatherRowAsFloat(t, from, view.strides[3],
                                 reinterpret_cast<float *>(dst) + to, cols);
            }
          };
          gather(q_, a.q, n.queries, n.headDim, qData, keep16);
          gather(k_, a.k, n.keys, n.headDim, kData, keep16);
          gather(v_, a.v, n.keys, n.valueDim, reinterpret_cast<char *>(vData),
                 false);
        });

    dnnl::memory qMem(p.qDesc, engine(), qData), kMem(p.kDesc, engine(), kData),
        sMem(p.sDesc, engine(), sData), vMem(p.vDesc, engine(), vData),
        oMem(p.oDesc, engine(), oData);
    dnnl::memory padMem(dnnl::memory::desc({static_cast<int64_t>(p.scratchpad)},
                                           dt::u8, dnnl::memory::format_tag::a),
                        engine(), pad);
    p.scores.execute(stream, {{DNNL_ARG_SRC, qMem},
                              {DNNL_ARG_WEIGHTS, kMem},
                              {DNNL_ARG_DST, sMem},
                              {DNNL_ARG_SCRATCHPAD, padMem}});
    stream.wait();

    // Softmax over each row of scale * S (+ mask), in place.
    detail::parallelItems(count * n.queries, n.keys * 8, [&](int64_t row) {
      const int64_t pair = first + row / n.queries, i = row % n.queries;
      const int64_t b = pair / n.heads, h = pair % n.heads;
      float *s = sData + row * n.keys;
      for (int64_t j = 0; j < n.keys; ++j)
        s[j] *= a.scale;
      if (hasMask_)
        addRowAsFloat(mask_, a.mask.at(b, h, i, 0), a.mask.strides[3], s,
                      n.keys);
      softmaxInPlace(s, n.keys);
    });

    p.values.execute(stream, {{DNNL_ARG_SRC, sMem},
                              {DNNL_ARG_WEIGHTS, vMem},
                              {DNNL_ARG_DST, oMem},
                              {DNNL_ARG_SCRATCHPAD, padMem}});
    stream.wait();

    // O into its view, rounded once.
    detail::parallelItems(count, n.queries * n.valueDim, [&](int64_t item) {
      const int64_t pair = first + item;
      const int64_t b = pair / n.heads, h = pair % n.heads;
      const float *src = oData + item * n.queries * n.valueDim;
      for (int64_t i = 0; i < n.queries; ++i)
        scatterRow(src + i * n.valueDim, o_, a.o.at(b, h, i, 0), a.o.strides[3],
                   n.valueDim);
    });
  }

  TensorView q_, k_, v_, o_, mask_;
  bool hasMask_ = false;
  AttentionOptions options_;
  dnnl::stream stream_;
  /// Blocks one per thread: each thread's stream (none: the call's
  /// blocks one after another, each on every thread).
  std::vector<dnnl::stream> slots_;
  size_t slotBytes_ = 0;
  dt qkType_ = dt::f32;
  int64_t block_ = 1;
  BlockPrimitives full_, rest_;
  size_t scratchBytes_ = 0;
  std::string scoresName_, name_;
};

} // namespace

FastCallChoice prepareAttention(const PlanCall &call,
                                const std::vector<TensorView> &operands,
                                const std::vector<TensorView> &results,
                                const std::vector<bool> &,
                                const FilterSource *) {
  std::array<const TensorView *, 4> in;
  std::array<const TensorView *, 1> out;
  if (!bindCallBuffers(
          call, operands,
          {{{"q", false}, {"k", false}, {"v", false}, {"mask", true}}}, in,
          results, {{{"o", false}}}, out))
    return referenceKernel("the reference kernel reports the call's error");
  Result<AttentionOptions> options = attentionOptionsOf(call, in[3] != nullptr);
  if (!options ||
      !checkAttention(*in[0], *in[1], *in[2], in[3], *out[0], *options))
    return referenceKernel("the reference kernel reports the call's error");
  return catchingErrors([&]() -> FastCallChoice {
    auto prepared = std::make_unique<AttentionCall>(*in[0], *in[1], *in[2],
                                                    in[3], *out[0], *options);
    std::string why;
    if (!prepared->prepare(why))
      return referenceKernel(why);
    return {std::move(prepared), ""};
  });
}

} // namespace mp::rt::cpu::onednn
