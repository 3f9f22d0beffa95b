//===- OneDnnConvTiles.cpp - widened convolutions in cache-sized blocks ---===//
//
// On CPUs without f16 kernels (narrowIsNative: AMD's Zen 4, Intel's before
// Sapphire Rapids) oneDNN computes no f16 convolution, so an f16 x or y goes
// through an f32 copy in the scratch: a pass widening x before the
// primitive, one rounding its f32 result into y after it. Over whole
// tensors those copies do not stay in the cache (MobileNetV2's first layers
// write 2.4M elements, 9.6 MB in f32), and the two passes and the f32 result
// cost as much as the convolution: the f16 plan took 1.5-1.6x the fp32
// plan's time. A channels-last 2-d convolution runs here per block of output
// rows of one image instead: the block's input rows (with the rows its
// windows overlap) are widened into the scratch, the primitive writes the
// block's f32 result there, and it is rounded into y while it is still in
// the cache. Each thread does that for its own blocks, with primitives made
// for one thread, in one parallel region for the whole call (a pass per
// block for each of the three steps cost a region each: MobileNetV2's f16
// plan 6.4 -> 5.5 ms). Blocks differ only in the first and last ones'
// padding and the last one's height: a few primitives, made when the call
// is prepared. Each element is computed as the whole-tensor primitive
// computes it (its window, f32 accumulation, bias, residual and activation,
// one rounding).
//
// CPUs whose 16-bit kernels are slower than their f32 ones
// (fastDotProducts: f16 kernels that widen inside, AVX512-FP16 without
// AMX-FP16; bf16 ones on Intel's AVX512-BF16 CPUs without AMX) take this
// path too, f16 or bf16, for ungrouped convolutions (OneDnnConv.cpp).
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "../Parallel.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/Half.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace mp::rt::cpu::onednn {
namespace {

/// The f32 bytes of one block (input rows, result and residual), which one
/// thread widens, convolves and rounds: half of one core's L2 on the CPUs
/// here (1-2 MiB). MobileNetV2's f16 plan: 5.5 ms with 512 KiB, 5.7 with
/// 1 MiB.
constexpr int64_t kBlockBytes = int64_t(1) << 19;
/// Below this many f32 bytes of x and y together one primitive on
/// whole-tensor copies is as fast (MobileNetV2: the same time from 64 to
/// 256 KiB, 5.7 ms from 1 MiB, 5.8 from 3 MiB).
constexpr int64_t kBlocksFromBytes = int64_t(1) << 18;

size_t alignedBytes(size_t n) { return (n + 63) / 64 * 64; }

/// A dense channels-last [1, rows, width, channels] block as oneDNN's
/// logical [1, C, rows, width].
dnnl::memory::desc blockDesc(int64_t rows, int64_t width, int64_t channels,
                             dnnl::memory::data_type type) {
  return dnnl::memory::desc(
      {1, channels, rows, width}, type,
      {rows * width * channels, 1, width * channels, channels});
}

/// The rows of x [N, H, W, C] and y [N, OH, OW, M] (widened ones through
/// f32 blocks in the scratch) and the primitive for each block shape.
class TiledWidenedConv final : public PreparedCall {
public:
  /// One block shape: `outRows` result rows from `inRows` input rows with
  /// `padTop` / `padBottom` rows of zeros around them, and its primitive,
  /// made for one thread.
  struct Variant {
    int64_t inRows, outRows, padTop, padBottom;
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward primitive;
  };
  /// A thread's handles of one variant (set per block) and their map.
  struct Handles {
    dnnl::memory src, dst, residual, scratchpad;
    std::unordered_map<int, dnnl::memory> args;
  };
  /// One thread's stream and handles (one per variant); its part of the
  /// scratch is the slot's index times slotBytes_.
  struct Slot {
    dnnl::stream stream;
    std::vector<Handles> handles;
  };
  /// Result rows [outBegin, outBegin + variant.outRows) of image n, read
  /// from input rows from inBegin on.
  struct Block {
    int64_t n, outBegin, inBegin;
    size_t variant;
  };

  size_t scratchBytes() const override { return slotBytes_ * slots_.size(); }
  const std::string &implementation() const override { return name_; }
  Status run(void *scratch) override;

  TensorView x_, y_;
  /// Whether x, and y with the residual, go through f32 blocks.
  bool xWidened_ = false, yWidened_ = false;
  std::optional<TensorView> residual_;
  std::vector<Variant> variants_;
  std::vector<Block> blocks_;
  std::vector<Slot> slots_;
  /// Offsets in a slot: the primitive's scratchpad first.
  size_t srcOffset_ = 0, dstOffset_ = 0, residualOffset_ = 0;
  size_t slotBytes_ = 0;
  std::vector<std::shared_ptr<const dnnl::memory>> held_;
  std::string name_;

private:
  void runBlock(const Block &b, Slot &slot, char *base);
};

/// Element `offset` of `t`'s data.
void *elementOf(const TensorView &t, int64_t offset) {
  return static_cast<char *>(t.data) + offset * byteSize(t.dtype);
}

/// count 16-bit elements of `t` from `offset` on -> f32 (exact), and back,
/// rounded once, on the calling thread.
void widenElements(const TensorView &t, int64_t offset, float *f32,
                   int64_t count) {
  widenOnThread(t.dtype, static_cast<const uint16_t *>(elementOf(t, offset)),
                f32, static_cast<size_t>(count));
}
void narrowElements(const float *f32, const TensorView &t, int64_t offset,
                    int64_t count) {
  narrowOnThread(t.dtype, f32, static_cast<uint16_t *>(elementOf(t, offset)),
                 static_cast<size_t>(count));
}

void TiledWidenedConv::runBlock(const Block &b, Slot &slot, char *base) {
  auto *srcBlock = reinterpret_cast<float *>(base + srcOffset_);
  auto *dstBlock = reinterpret_cast<float *>(base + dstOffset_);
  auto *residualBlock = reinterpret_cast<float *>(base + residualOffset_);
  // x [N, H, W, C], y [N, OH, OW, M]: elements per row and rows per image.
  const int64_t inRow = x_.shape[2] * x_.shape[3],
                outRow = y_.shape[2] * y_.shape[3];
  const int64_t height = x_.shape[1], outHeight = y_.shape[1];
  const Variant &v = variants_[b.variant];
  Handles &h = slot.handles[b.variant];
  const int64_t in = (b.n * height + b.inBegin) * inRow;
  const int64_t out = (b.n * outHeight + b.outBegin) * outRow;
  if (xWidened_) {
    widenElements(x_, in, srcBlock, v.inRows * inRow);
    h.src.set_data_handle(srcBlock);
  } else {
    h.src.set_data_handle(elementOf(x_, in));
  }
  h.dst.set_data_handle(yWidened_ ? dstBlock : elementOf(y_, out));
  if (residual_ && yWidened_) {
    widenElements(*residual_, out, residualBlock, v.outRows * outRow);
    h.residual.set_data_handle(residualBlock);
  } else if (residual_) {
    h.residual.set_data_handle(elementOf(*residual_, out));
  }
  if (h.scratchpad)
    h.scratchpad.set_data_handle(base);
  v.primitive.execute(slot.stream, h.args);
  slot.stream.wait();
  if (yWidened_)
    narrowElements(dstBlock, y_, out, v.outRows * outRow);
}

Status TiledWidenedConv::run(void *scratch) {
  char *base = static_cast<char *>(scratch);
  std::mutex failure;
  std::string error;
  // Each thread widens, convolves and rounds its own blocks, in its own part
  // of the scratch: one parallel region for the call, where separate
  // widening, convolving and rounding passes per block would cost a region
  // (microseconds) each.
  detail::parallelSlots(
      static_cast<int64_t>(blocks_.size()), static_cast<int>(slots_.size()),
      [&](int64_t block, int slot) {
        try {
          runBlock(blocks_[static_cast<size_t>(block)],
                   slots_[static_cast<size_t>(slot)],
                   base + slotBytes_ * static_cast<size_t>(slot));
        } catch (const dnnl::error &e) {
          std::lock_guard<std::mutex> lock(failure);
          error = e.what();
        }
      });
  if (!error.empty())
    return Status::error(name_ + ": " + error);
  return Status::ok();
}

/// Whether the bytes of a and b overlap.
bool overlap(const TensorView &a, const TensorView &b) {
  const char *pa = static_cast<const char *>(a.data);
  const char *pb = static_cast<const char *>(b.data);
  const size_t na = a.numElements() * byteSize(a.dtype);
  const size_t nb = b.numElements() * byteSize(b.dtype);
  return pa < pb + nb && pb < pa + na;
}

} // namespace

FastCallChoice prepareTiledWidenedConv(
    const TensorView &x, const TensorView &w, const TensorView *bias,
    const TensorView *residual, const TensorView &y, const ConvOptions &o,
    const std::vector<bool> &constant, const FilterSource *filter) {
  const bool xWidened = widenedOnThisThread(x.dtype),
             yWidened = widenedOnThisThread(y.dtype);
  if (!(xWidened || yWidened) || o.layout != Layout::NHWC ||
      x.shape.size() != 4)
    return referenceKernel("");
  const int64_t n = x.shape[0], height = x.shape[1], width = x.shape[2],
                channels = x.shape[3];
  const int64_t outHeight = y.shape[1], outWidth = y.shape[2],
                outChannels = y.shape[3];
  const int64_t stride = o.strides.empty() ? 1 : o.strides[0];
  const int64_t dilation = o.dilations.empty() ? 1 : o.dilations[0];
  const int64_t padTop = o.padsBegin.empty() ? 0 : o.padsBegin[0];
  const int64_t extent = (w.shape[1] - 1) * dilation + 1;
  const int64_t f32 = static_cast<int64_t>(sizeof(float));
  const int64_t inRow = width * channels, outRow = outWidth * outChannels;
  if ((x.numElements() + y.numElements()) * f32 < kBlocksFromBytes ||
      outHeight < 2)
    return referenceKernel("");
  // Blocks are written row by row: y may not share bytes with x, and a
  // residual is y itself (in place) or apart from it.
  if (overlap(x, y) ||
      (residual && residual->data != y.data && overlap(*residual, y)))
    return referenceKernel("");
  // f32 bytes per result row: the result, the residual and `stride` input
  // rows (f32 or the data's own: an estimate either way).
  const int64_t perRow = (outRow * (residual ? 2 : 1) + stride * inRow) * f32;
  const int64_t rows = std::clamp<int64_t>(
      kBlockBytes / std::max<int64_t>(perRow, 1), 1, outHeight);
  if (rows == outHeight && n == 1)
    return referenceKernel("");

  auto isConstant = [&](size_t k) {
    return constant.size() > k && constant[k];
  };
  const dnnl::memory::data_type computeIn = *computeTypeOf(x.dtype);
  const dnnl::memory::data_type computeOut = *computeTypeOf(y.dtype);
  const ConvWindow win = convWindowOf(o, 2);
  dnnl::memory::desc wUser = filterDesc(w, o.layout, o.groups, computeIn);
  bool fromSource = false;
  Binding weights = filterBinding(DNNL_ARG_WEIGHTS, w, wUser, o, filter,
                                  isConstant(1), fromSource);
  // A filter or a widened bias that changes would be widened per block.
  if (!weights.constant ||
      (bias && widenedOnThisThread(bias->dtype) && !isConstant(2)))
    return referenceKernel("");
  std::optional<dnnl::memory::data_type> biasType;
  if (bias)
    biasType = computeTypeOf(bias->dtype);
  if (bias && !biasType)
    return referenceKernel("");

  const int threads = std::max(1, cpuThreads());
  return catchingErrors([&] {
    auto call = std::make_unique<TiledWidenedConv>();
    call->x_ = x;
    call->y_ = y;
    call->xWidened_ = xWidened;
    call->yWidened_ = yWidened;
    if (residual)
      call->residual_ = *residual;
    dnnl::memory::desc biasDesc;
    std::shared_ptr<const dnnl::memory> biasMemory;
    if (bias) {
      biasDesc = plainDesc({bias->shape[0]}, *biasType);
      Binding b(DNNL_ARG_BIAS, biasDesc, *bias, isConstant(2));
      if (b.constant)
        biasMemory = preparedConstant(b, biasDesc);
      else
        biasMemory = std::make_shared<const dnnl::memory>(biasDesc, engine(),
                                                          bias->data);
      call->held_.push_back(biasMemory);
    }
    // The primitives, one per block shape, and the weights in their layout.
    std::vector<std::shared_ptr<const dnnl::memory>> preparedWeights;
    size_t scratchpadBytes = 0;
    int64_t maxInRows = 0;
    // The blocks of one image (every image has the same).
    std::vector<TiledWidenedConv::Block> imageBlocks;
    {
      OneThreadPrimitives oneThread;
      for (int64_t begin = 0; begin < outHeight; begin += rows) {
        const int64_t outRows = std::min(rows, outHeight - begin);
        // The input rows the block's windows span, and the part inside x.
        const int64_t first = begin * stride - padTop;
        const int64_t last = (begin + outRows - 1) * stride - padTop + extent;
        const int64_t inBegin = std::clamp<int64_t>(first, 0, height);
        const int64_t inEnd = std::clamp<int64_t>(last, 0, height);
        if (inEnd <= inBegin)
          return referenceKernel(""); // a block of padding alone
        const int64_t inRows = inEnd - inBegin;
        const int64_t top = inBegin - first, bottom = last - inEnd;
        size_t index = 0;
        for (; index < call->variants_.size(); ++index) {
          const TiledWidenedConv::Variant &v = call->variants_[index];
          if (v.inRows == inRows && v.outRows == outRows && v.padTop == top &&
              v.padBottom == bottom)
            break;
        }
        if (index == call->variants_.size()) {
          dnnl::memory::desc src =
              blockDesc(inRows, width, channels, computeIn);
          dnnl::memory::desc dst =
              blockDesc(outRows, outWidth, outChannels, computeOut);
          ConvWindow blockWindow = win;
          blockWindow.padsBegin[0] = top;
          blockWindow.padsEnd[0] = bottom;
          dnnl::convolution_forward::primitive_desc pd =
              convForwardDesc(src, anyLayout(wUser), bias ? &biasDesc : nullptr,
                              dst, blockWindow, o, residual != nullptr);
          if (isReferenceImplementation(pd))
            return referenceKernel(
                "oneDNN has only its reference implementation (" +
                implementationName(pd) + ")");
          scratchpadBytes =
              std::max(scratchpadBytes, pd.scratchpad_desc().get_size());
          preparedWeights.push_back(
              preparedConstant(weights, pd.weights_desc()));
          if (call->name_.empty())
            call->name_ = implementationName(pd) + ", " +
                          std::string(dtypeName(xWidened ? x.dtype : y.dtype)) +
                          " in blocks of " + std::to_string(rows) +
                          " rows per thread";
          call->variants_.push_back({inRows, outRows, top, bottom, pd,
                                     dnnl::convolution_forward(pd)});
        }
        maxInRows = std::max(maxInRows, inRows);
        imageBlocks.push_back({0, begin, inBegin, index});
      }
    }
    for (int64_t image = 0; image < n; ++image)
      for (TiledWidenedConv::Block b : imageBlocks) {
        b.n = image;
        call->blocks_.push_back(b);
      }
    // Each thread's handles: its blocks' x, y and residual and its
    // scratchpad, set per block.
    const size_t slots =
        std::min<size_t>(static_cast<size_t>(threads), call->blocks_.size());
    call->slots_.resize(slots);
    for (TiledWidenedConv::Slot &slot : call->slots_) {
      slot.stream = dnnl::stream(engine());
      for (size_t k = 0; k < call->variants_.size(); ++k) {
        const auto &desc = call->variants_[k].pd;
        TiledWidenedConv::Handles h;
        h.src = dnnl::memory(desc.src_desc(), engine(), nullptr);
        h.dst = dnnl::memory(desc.dst_desc(), engine(), nullptr);
        h.args = {{DNNL_ARG_SRC, h.src},
                  {DNNL_ARG_WEIGHTS, *preparedWeights[k]},
                  {DNNL_ARG_DST, h.dst}};
        if (bias)
          h.args[DNNL_ARG_BIAS] = *biasMemory;
        if (residual) {
          h.residual = dnnl::memory(desc.dst_desc(), engine(), nullptr);
          h.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
              h.residual;
        }
        if (desc.scratchpad_desc().get_size()) {
          h.scratchpad =
              dnnl::memory(desc.scratchpad_desc(), engine(), nullptr);
          h.args[DNNL_ARG_SCRATCHPAD] = h.scratchpad;
        }
        slot.handles.push_back(std::move(h));
      }
    }
    for (auto &w : preparedWeights)
      call->held_.push_back(std::move(w));
    // A slot of the scratch: the primitives' scratchpad, then the f32
    // blocks.
    size_t offset = alignedBytes(scratchpadBytes);
    call->srcOffset_ = offset;
    if (xWidened)
      offset += alignedBytes(static_cast<size_t>(maxInRows * inRow * f32));
    call->dstOffset_ = offset;
    if (yWidened)
      offset += alignedBytes(static_cast<size_t>(rows * outRow * f32));
    call->residualOffset_ = offset;
    if (yWidened && residual)
      offset += alignedBytes(static_cast<size_t>(rows * outRow * f32));
    call->slotBytes_ = offset;
    FastCallChoice choice{std::move(call), ""};
    choice.filterFromSource = fromSource;
    return choice;
  });
}

} // namespace mp::rt::cpu::onednn
