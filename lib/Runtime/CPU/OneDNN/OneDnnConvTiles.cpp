//===- OneDnnConvTiles.cpp - f16 convolutions in cache-sized blocks -------===//
//
// On CPUs without f16 kernels (f16IsNative: AMD's Zen 4, Intel's before
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
// the cache. Blocks differ only in the first and last ones' padding and the
// last one's height: a few primitives, made when the call is prepared. Each
// element is computed as the whole-tensor primitive computes it (its window,
// f32 accumulation, bias, residual and activation, one rounding).
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace mp::rt::cpu::onednn {
namespace {

/// The f32 bytes of one block (input rows, result and residual): about what
/// one core's L2 holds on the CPUs here (1-2 MiB), both threads working on
/// the block.
constexpr int64_t kBlockBytes = int64_t(1) << 20;
/// Below this many f32 bytes of x and y together the whole-tensor copies
/// stay in the cache: one primitive is cheaper than several.
constexpr int64_t kBlocksFromBytes = int64_t(3) << 20;

size_t alignedBytes(size_t n) { return (n + 63) / 64 * 64; }

/// A dense channels-last [1, rows, width, channels] block as oneDNN's
/// logical [1, C, rows, width].
dnnl::memory::desc blockDesc(int64_t rows, int64_t width, int64_t channels,
                             dnnl::memory::data_type type) {
  return dnnl::memory::desc(
      {1, channels, rows, width}, type,
      {rows * width * channels, 1, width * channels, channels});
}

/// The rows of x [N, H, W, C] and y [N, OH, OW, M] (f16 ones through
/// f32 blocks in the scratch) and the primitive for each block shape.
class TiledF16Conv final : public PreparedCall {
public:
  /// One block shape: `outRows` result rows from `inRows` input rows with
  /// `padTop` / `padBottom` rows of zeros around them.
  struct Variant {
    int64_t inRows, outRows, padTop, padBottom;
    dnnl::convolution_forward primitive;
    /// Handles set per block (the map shares them).
    dnnl::memory src, dst, residual, scratchpad;
    std::unordered_map<int, dnnl::memory> args;
  };
  /// Result rows [outBegin, outBegin + variant.outRows) of image n, read
  /// from input rows from inBegin on.
  struct Block {
    int64_t n, outBegin, inBegin;
    size_t variant;
  };

  size_t scratchBytes() const override { return scratchBytes_; }
  const std::string &implementation() const override { return name_; }
  Status run(void *scratch) override;

  TensorView x_, y_;
  std::optional<TensorView> residual_;
  std::vector<Variant> variants_;
  std::vector<Block> blocks_;
  /// Offsets in the scratch: the primitive's scratchpad first.
  size_t srcOffset_ = 0, dstOffset_ = 0, residualOffset_ = 0;
  size_t scratchBytes_ = 0;
  std::vector<std::shared_ptr<const dnnl::memory>> held_;
  dnnl::stream stream_;
  std::string name_;
};

/// Element `offset` of `t`'s data.
void *elementOf(const TensorView &t, int64_t offset) {
  return static_cast<char *>(t.data) + offset * byteSize(t.dtype);
}

Status TiledF16Conv::run(void *scratch) {
  char *base = static_cast<char *>(scratch);
  auto *srcBlock = reinterpret_cast<float *>(base + srcOffset_);
  auto *dstBlock = reinterpret_cast<float *>(base + dstOffset_);
  auto *residualBlock = reinterpret_cast<float *>(base + residualOffset_);
  const bool xF16 = x_.dtype == DType::F16, yF16 = y_.dtype == DType::F16;
  // x [N, H, W, C], y [N, OH, OW, M]: elements per row and rows per image.
  const int64_t inRow = x_.shape[2] * x_.shape[3],
                outRow = y_.shape[2] * y_.shape[3];
  const int64_t height = x_.shape[1], outHeight = y_.shape[1];
  try {
    for (const Block &b : blocks_) {
      Variant &v = variants_[b.variant];
      const int64_t in = (b.n * height + b.inBegin) * inRow;
      const int64_t out = (b.n * outHeight + b.outBegin) * outRow;
      if (xF16) {
        widenF16(static_cast<const uint16_t *>(elementOf(x_, in)), srcBlock,
                 v.inRows * inRow);
        v.src.set_data_handle(srcBlock);
      } else {
        v.src.set_data_handle(elementOf(x_, in));
      }
      v.dst.set_data_handle(yF16 ? dstBlock : elementOf(y_, out));
      if (residual_ && yF16) {
        widenF16(static_cast<const uint16_t *>(elementOf(*residual_, out)),
                 residualBlock, v.outRows * outRow);
        v.residual.set_data_handle(residualBlock);
      } else if (residual_) {
        v.residual.set_data_handle(elementOf(*residual_, out));
      }
      if (v.scratchpad)
        v.scratchpad.set_data_handle(scratch);
      v.primitive.execute(stream_, v.args);
      stream_.wait();
      if (yF16)
        narrowToF16(dstBlock, static_cast<uint16_t *>(elementOf(y_, out)),
                    v.outRows * outRow);
    }
  } catch (const dnnl::error &e) {
    return Status::error(name_ + ": " + e.what());
  }
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

FastCallChoice prepareTiledF16Conv(const TensorView &x, const TensorView &w,
                                   const TensorView *bias,
                                   const TensorView *residual,
                                   const TensorView &y, const ConvOptions &o,
                                   const std::vector<bool> &constant,
                                   const FilterSource *filter) {
  const bool xF16 = x.dtype == DType::F16, yF16 = y.dtype == DType::F16;
  if (!(xF16 || yF16) || f16IsNative() || o.layout != Layout::NHWC ||
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
  // A filter or an f16 bias that changes would be widened per block.
  if (!weights.constant ||
      (bias && bias->dtype == DType::F16 && !isConstant(2)))
    return referenceKernel("");
  std::optional<dnnl::memory::data_type> biasType;
  if (bias)
    biasType = computeTypeOf(bias->dtype);
  if (bias && !biasType)
    return referenceKernel("");

  return catchingErrors([&] {
    auto call = std::make_unique<TiledF16Conv>();
    call->x_ = x;
    call->y_ = y;
    if (residual)
      call->residual_ = *residual;
    call->stream_ = dnnl::stream(engine());
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
    size_t scratchpadBytes = 0;
    int64_t maxInRows = 0;
    // The blocks of one image (every image has the same).
    std::vector<TiledF16Conv::Block> imageBlocks;
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
        const TiledF16Conv::Variant &v = call->variants_[index];
        if (v.inRows == inRows && v.outRows == outRows && v.padTop == top &&
            v.padBottom == bottom)
          break;
      }
      if (index == call->variants_.size()) {
        dnnl::memory::desc src = blockDesc(inRows, width, channels, computeIn);
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
        TiledF16Conv::Variant v{inRows, outRows, top, bottom,
                                dnnl::convolution_forward(pd)};
        v.src = dnnl::memory(src, engine(), nullptr);
        v.dst = dnnl::memory(dst, engine(), nullptr);
        std::shared_ptr<const dnnl::memory> prepared =
            preparedConstant(weights, pd.weights_desc());
        v.args = {{DNNL_ARG_SRC, v.src},
                  {DNNL_ARG_WEIGHTS, *prepared},
                  {DNNL_ARG_DST, v.dst}};
        call->held_.push_back(std::move(prepared));
        if (bias)
          v.args[DNNL_ARG_BIAS] = *biasMemory;
        if (residual) {
          v.residual = dnnl::memory(dst, engine(), nullptr);
          v.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
              v.residual;
        }
        dnnl::memory::desc pad = pd.scratchpad_desc();
        if (pad.get_size()) {
          v.scratchpad = dnnl::memory(pad, engine(), nullptr);
          v.args[DNNL_ARG_SCRATCHPAD] = v.scratchpad;
          scratchpadBytes = std::max(scratchpadBytes, pad.get_size());
        }
        if (call->name_.empty())
          call->name_ = implementationName(pd) + ", f16 in blocks of " +
                        std::to_string(rows) + " rows";
        call->variants_.push_back(std::move(v));
      }
      maxInRows = std::max(maxInRows, inRows);
      imageBlocks.push_back({0, begin, inBegin, index});
    }
    for (int64_t image = 0; image < n; ++image)
      for (TiledF16Conv::Block b : imageBlocks) {
        b.n = image;
        call->blocks_.push_back(b);
      }
    // The scratch: the primitives' scratchpad, then the f32 blocks.
    size_t offset = alignedBytes(scratchpadBytes);
    call->srcOffset_ = offset;
    if (xF16)
      offset += alignedBytes(static_cast<size_t>(maxInRows * inRow * f32));
    call->dstOffset_ = offset;
    if (yF16)
      offset += alignedBytes(static_cast<size_t>(rows * outRow * f32));
    call->residualOffset_ = offset;
    if (yF16 && residual)
      offset += alignedBytes(static_cast<size_t>(rows * outRow * f32));
    call->scratchBytes_ = offset;
    FastCallChoice choice{std::move(call), ""};
    choice.filterFromSource = fromSource;
    return choice;
  });
}

} // namespace mp::rt::cpu::onednn
