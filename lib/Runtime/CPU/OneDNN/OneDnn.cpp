//===- OneDnn.cpp - the CPU backend's oneDNN primitives -------------------===//
#include "OneDnn.h"

#include "mp/Runtime/Half.h"

#include "../../WeakCache.h"
#include "../Parallel.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace mp::rt::cpu::onednn {

const dnnl::engine &engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

namespace {
/// Set by ScopedWidening on its thread.
thread_local int wideningDepth = 0;

/// Whether oneDNN's ISA on this CPU includes `wanted` (the ISAs are bit
/// sets, each holding the ones it extends).
bool isaIncludes(dnnl::cpu_isa wanted) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bits = static_cast<unsigned>(wanted);
  return (isa & bits) == bits;
}

bool cpuHasF16Kernels() {
  static const bool has = isaIncludes(dnnl::cpu_isa::avx512_core_fp16) ||
                          isaIncludes(dnnl::cpu_isa::avx2_vnni_2);
  return has;
}

bool isAmdCpu() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

/// MP_CPU_16BIT_PRODUCTS: "native" (fast) or "f32" (not), else none.
std::optional<bool> dotProductsOverride() {
  const char *wanted = std::getenv("MP_CPU_16BIT_PRODUCTS");
  if (!wanted)
    return std::nullopt;
  if (std::string_view(wanted) == "native")
    return true;
  if (std::string_view(wanted) == "f32")
    return false;
  return std::nullopt;
}
} // namespace

bool narrowIsNative(DType t) {
  if (wideningDepth != 0)
    return false;
  return t == DType::BF16 || (t == DType::F16 && cpuHasF16Kernels());
}

bool fastDotProducts(DType t) {
  // Read at every call (calls are prepared at load, not per run), so that a
  // test can set it for the calls it prepares.
  const std::optional<bool> forced = dotProductsOverride();
  static const bool bf16 =
      isaIncludes(dnnl::cpu_isa::avx512_core_amx) ||
      (isaIncludes(dnnl::cpu_isa::avx512_core_bf16) && isAmdCpu());
  static const bool f16 = isaIncludes(dnnl::cpu_isa::avx512_core_amx_fp16);
  if (forced)
    return *forced;
  return t == DType::BF16 ? bf16 : t == DType::F16 && f16;
}

ScopedWidening::ScopedWidening() { ++wideningDepth; }
ScopedWidening::~ScopedWidening() { --wideningDepth; }

std::optional<dnnl::memory::data_type> computeTypeOf(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
  case DType::F32:
    return dt::f32;
  case DType::F16: // else widened (Binding::widened)
    return narrowIsNative(t) ? dt::f16 : dt::f32;
  case DType::BF16:
    return narrowIsNative(t) ? dt::bf16 : dt::f32;
  default:
    return std::nullopt;
  }
}

dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims,
                             dnnl::memory::data_type t) {
  return dnnl::memory::desc(dims, t, rowMajorStrides(dims));
}

dnnl::memory::desc anyLayout(const dnnl::memory::desc &d) {
  return dnnl::memory::desc(d.get_dims(), d.get_data_type(),
                            dnnl::memory::format_tag::any);
}

/// Row-major strides of `shape`.
dnnl::memory::dims rowMajorStrides(const Shape &shape) {
  dnnl::memory::dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

void channelsFirst(const Shape &shape, Layout layout, dnnl::memory::dims &dims,
                   dnnl::memory::dims &strides) {
  dnnl::memory::dims physical = rowMajorStrides(shape);
  dims.assign(shape.begin(), shape.end());
  strides = physical;
  if (layout == Layout::NCHW || shape.size() < 3)
    return;
  // The channels (last) move to position 1, the spatial dims after them.
  std::rotate(dims.begin() + 1, dims.end() - 1, dims.end());
  std::rotate(strides.begin() + 1, strides.end() - 1, strides.end());
}

dnnl::memory::desc activationDesc(const TensorView &t, Layout layout,
                                  dnnl::memory::data_type type) {
  dnnl::memory::dims dims, strides;
  channelsFirst(t.shape, layout, dims, strides);
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory::desc filterDesc(const TensorView &w, Layout layout,
                              int64_t groups, dnnl::memory::data_type type) {
  dnnl::memory::dims logical, strides;
  channelsFirst(w.shape, layout, logical, strides);
  if (groups > 1) {
    // M = g * (M/g), the group outermost.
    logical[0] /= groups;
    logical.insert(logical.begin(), groups);
    strides.insert(strides.begin(), strides[0] * logical[1]);
  }
  return dnnl::memory::desc(logical, type, strides);
}

Binding filterBinding(int arg, const TensorView &filter,
                      const dnnl::memory::desc &user, const ConvOptions &o,
                      const FilterSource *source, bool constant,
                      bool &fromSource) {
  fromSource = false;
  if (!source || o.layout != Layout::NHWC || filter.shape.size() < 3)
    return Binding(arg, user, filter, constant);
  // The channels-first shape of the filter: [M, k..., C/g] -> [M, C/g, k...].
  Shape channelsFirstShape = filter.shape;
  std::rotate(channelsFirstShape.begin() + 1, channelsFirstShape.end() - 1,
              channelsFirstShape.end());
  const TensorView &buffer = source->buffer;
  // f16 buffers go through f32 copies of their own: not worth it here. A
  // native bf16 filter is computed on as bf16, and the reorder from an f32
  // source rounds as the plan's cast does (to nearest even). A widened bf16
  // filter is computed on as f32: from a bf16 source through its f32 copy
  // (exact), from an f32 source (a master weight, an f32 gradient) rounded
  // to bf16 values on the way (Binding::roundedTo), as the plan's cast does.
  std::optional<dnnl::memory::data_type> type = computeTypeOf(buffer.dtype);
  const bool filterWidened = widenedOnThisThread(filter.dtype);
  const bool rounds = filterWidened && buffer.dtype == DType::F32;
  if (buffer.shape != channelsFirstShape || !type ||
      buffer.dtype == DType::F16 || filter.dtype == DType::F16 ||
      (!filterWidened && widenedOnThisThread(buffer.dtype)) ||
      (filterWidened && !rounds && buffer.dtype != filter.dtype))
    return Binding(arg, user, filter, constant);
  fromSource = true;
  Binding b(arg, filterDesc(buffer, Layout::NCHW, o.groups, *type), buffer,
            source->constant);
  b.staged = b.output;
  if (rounds)
    b.roundedTo = filter.dtype;
  return b;
}

ConvWindow convWindowOf(const ConvOptions &o, size_t spatial) {
  ConvWindow w{dnnl::memory::dims(spatial, 1), dnnl::memory::dims(spatial, 0),
               dnnl::memory::dims(spatial, 0), dnnl::memory::dims(spatial, 0)};
  for (size_t i = 0; i < spatial; ++i) {
    if (!o.strides.empty())
      w.strides[i] = o.strides[i];
    if (!o.dilations.empty())
      w.dilates[i] = o.dilations[i] - 1; // oneDNN counts the gaps
    if (!o.padsBegin.empty()) {
      w.padsBegin[i] = o.padsBegin[i];
      w.padsEnd[i] = o.padsEnd[i];
    }
  }
  return w;
}

dnnl::convolution_forward::primitive_desc
convForwardDesc(const dnnl::memory::desc &src,
                const dnnl::memory::desc &weights,
                const dnnl::memory::desc *bias, const dnnl::memory::desc &dst,
                const ConvWindow &w, const ConvOptions &o, bool residual) {
  dnnl::primitive_attr attr = userScratchpad();
  dnnl::post_ops ops;
  if (residual)
    ops.append_binary(dnnl::algorithm::binary_add, dst);
  appendActivation(ops, o.activation, o.clipMin, o.clipMax);
  attr.set_post_ops(ops);
  using Pd = dnnl::convolution_forward::primitive_desc;
  const auto kind = dnnl::prop_kind::forward_inference;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  return bias ? Pd(engine(), kind, algorithm, src, weights, *bias, dst,
                   w.strides, w.dilates, w.padsBegin, w.padsEnd, attr)
              : Pd(engine(), kind, algorithm, src, weights, dst, w.strides,
                   w.dilates, w.padsBegin, w.padsEnd, attr);
}

dnnl::post_ops postOpsOf(Activation activation, float lo, float hi) {
  dnnl::post_ops ops;
  appendActivation(ops, activation, lo, hi);
  return ops;
}

void appendActivation(dnnl::post_ops &ops, Activation activation, float lo,
                      float hi) {
  switch (activation) {
  case Activation::None:
    break;
  case Activation::Relu:
    ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    break;
  case Activation::Gelu:
    ops.append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    break;
  case Activation::GeluTanh:
    ops.append_eltwise(dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
    break;
  case Activation::Clip: // as the elementwise clip (OneDnnEltwise.cpp)
    ops.append_eltwise(dnnl::algorithm::eltwise_clip_v2, lo, hi);
    break;
  case Activation::Silu: // x * sigmoid(alpha x), alpha = 1
    ops.append_eltwise(dnnl::algorithm::eltwise_swish, 1.f, 0.f);
    break;
  case Activation::Sigmoid:
    ops.append_eltwise(dnnl::algorithm::eltwise_logistic, 0.f, 0.f);
    break;
  case Activation::Tanh:
    ops.append_eltwise(dnnl::algorithm::eltwise_tanh, 0.f, 0.f);
    break;
  case Activation::HardSwish:
    // x * clamp(x / 6 + 1 / 2, 0, 1).
    ops.append_eltwise(dnnl::algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f);
    break;
  }
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {
void setOpenMpThreads(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}
} // namespace

OneThreadPrimitives::OneThreadPrimitives() : threads_(cpuThreads()) {
  setOpenMpThreads(1);
}
OneThreadPrimitives::~OneThreadPrimitives() { setOpenMpThreads(threads_); }

bool isOutputArg(int arg) {
  return arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC ||
         arg == DNNL_ARG_DIFF_WEIGHTS || arg == DNNL_ARG_DIFF_SCALE ||
         arg == DNNL_ARG_DIFF_SHIFT;
}

bool isReferenceImplementation(const dnnl::primitive_desc_base &pd) {
  const std::string_view impl = pd.impl_info_str();
  return impl.substr(0, 3) == "ref" ||
         impl.find("_ref") != std::string_view::npos;
}

std::string implementationName(const dnnl::primitive_desc_base &pd) {
  return std::string("onednn:") + pd.impl_info_str();
}

namespace {
/// Offsets in the scratch: 64-byte aligned (oneDNN's and AVX-512's line).
size_t alignedBytes(size_t n) { return (n + 63) / 64 * 64; }

/// count 16-bit values of `storage` -> f32 and back (rounded once), split
/// over the threads (Parallel.h): the f32 copies of widened operands.
void widen16Bit(DType storage, const uint16_t *narrow, float *f32,
                int64_t count) {
  detail::parallelRanges(count, [&](int64_t begin, int64_t end) {
    widenOnThread(storage, narrow + begin, f32 + begin,
                  static_cast<size_t>(end - begin));
  });
}

void narrow16Bit(DType storage, const float *f32, uint16_t *narrow,
                 int64_t count) {
  detail::parallelRanges(count, [&](int64_t begin, int64_t end) {
    narrowOnThread(storage, f32 + begin, narrow + begin,
                   static_cast<size_t>(end - begin));
  });
}

/// count f32 values rounded once to `type` (f16, bf16) and widened back
/// (exact): to[i] = the nearest `type` value to from[i]; from may be to.
void roundThrough16Bit(DType type, const float *from, float *to,
                       int64_t count) {
  detail::parallelRanges(count, [&](int64_t begin, int64_t end) {
    constexpr int64_t kChunk = 1024;
    uint16_t narrow[kChunk];
    for (int64_t at = begin; at < end; at += kChunk) {
      const auto n = static_cast<size_t>(std::min(kChunk, end - at));
      narrowOnThread(type, from + at, narrow, n);
      widenOnThread(type, narrow, to + at, n);
    }
  });
}

/// The constants of the process's prepared calls (weights widened from 16
/// bits and / or reordered into a primitive's layout, or a call's own
/// repacking), one per weight, kind and layout however many executors run
/// the plan: an executor made from a copy of a loaded plan sees the same
/// weight bytes (the plan's mapping) and finds the constant the first one
/// made.
struct ConstantKey {
  const void *data;
  /// "" for PrimitiveCall's conversions and reorders (from `from`); a call's
  /// name for its own repacking (`from` then empty).
  std::string kind;
  bool widened;
  DType roundedTo;
  dnnl::memory::desc from, to;
  bool operator==(const ConstantKey &o) const {
    return data == o.data && kind == o.kind && widened == o.widened &&
           roundedTo == o.roundedTo && from == o.from && to == o.to;
  }
};
using ConstantCache = rt::detail::WeakCache<ConstantKey, const dnnl::memory>;
ConstantCache &constantCache() {
  static ConstantCache cache;
  return cache;
}

/// `b`'s constant bytes as `wanted` wants them: widened to f32, then
/// reordered where the layout differs, into memory of its own (a constant
/// needing neither is bound as it is).
dnnl::memory prepareConstant(const Binding &b, const dnnl::memory::desc &wanted,
                             dnnl::stream &stream) {
  dnnl::memory user;
  if (b.widened) {
    user = dnnl::memory(b.desc, engine());
    widenOnThread(b.storage, static_cast<const uint16_t *>(b.data),
                  static_cast<float *>(user.get_data_handle()),
                  b.desc.get_size() / sizeof(float));
  } else if (b.roundedTo != DType::F32) {
    user = dnnl::memory(b.desc, engine());
    roundThrough16Bit(b.roundedTo, static_cast<const float *>(b.data),
                      static_cast<float *>(user.get_data_handle()),
                      static_cast<int64_t>(b.desc.get_size() / sizeof(float)));
  } else {
    user = dnnl::memory(b.desc, engine(), b.data);
  }
  if (wanted == b.desc)
    return user; // widened or rounded
  dnnl::memory own(wanted, engine());
  dnnl::reorder(user, own).execute(stream, user, own);
  stream.wait();
  return own;
}
} // namespace

std::shared_ptr<const dnnl::memory>
preparedConstant(const Binding &b, const dnnl::memory::desc &wanted) {
  return constantCache().get(
      ConstantKey{b.data, "", b.widened, b.roundedTo, b.desc, wanted}, [&] {
        dnnl::stream stream(engine());
        return std::make_shared<const dnnl::memory>(
            prepareConstant(b, wanted, stream));
      });
}

size_t preparedConstantBytes() {
  return constantCache().liveBytes(
      [](const ConstantKey &, const dnnl::memory *m) {
        return m->get_desc().get_size();
      });
}

std::shared_ptr<const dnnl::memory>
sharedConstant(const void *source, const std::string &kind,
               const dnnl::memory::desc &wanted,
               const std::function<dnnl::memory()> &make) {
  return constantCache().get(
      ConstantKey{source, kind, false, DType::F32, dnnl::memory::desc(),
                  wanted},
      [&] { return std::make_shared<const dnnl::memory>(make()); });
}

FastCallChoice PrimitiveCall::prepare(const dnnl::primitive_desc_base &pd,
                                      dnnl::primitive primitive,
                                      const std::vector<Binding> &buffers,
                                      std::string_view whyReferenceIsFast) {
  const bool reference = isReferenceImplementation(pd);
  if (reference && whyReferenceIsFast.empty())
    return referenceKernel("oneDNN has only its reference implementation (" +
                           implementationName(pd) + ")");
  auto call = std::unique_ptr<PrimitiveCall>(new PrimitiveCall());
  call->primitive_ = std::move(primitive);
  call->name_ = implementationName(pd);
  if (reference)
    call->name_ += " (" + std::string(whyReferenceIsFast) + ")";
  if (std::any_of(buffers.begin(), buffers.end(), [](const Binding &b) {
        return b.widened || b.roundedTo != DType::F32;
      }))
    call->name_ += ", on f32 copies";
  call->stream_ = dnnl::stream(engine());
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  call->primitiveScratchBytes_ = scratch.get_size();
  size_t scratchEnd = alignedBytes(call->primitiveScratchBytes_);
  // Memory for a per-run copy in the scratch, at the next aligned offset.
  auto inScratch = [&](const dnnl::memory::desc &desc) {
    dnnl::memory m(desc, engine(), nullptr);
    call->inScratch_.push_back({m, scratchEnd});
    scratchEnd += alignedBytes(desc.get_size());
    return m;
  };
  for (const Binding &b : buffers) {
    if (b.prepared) {
      call->args_[b.arg] = *b.prepared;
      call->held_.push_back(b.prepared);
      continue;
    }
    const bool output = b.output;
    // The layout the primitive chose for the operand (weights, and
    // activations given as `any`), else the buffer's own.
    dnnl::memory::desc wanted = pd.query_md(dnnl::query::exec_arg_md, b.arg);
    if (wanted.is_zero())
      wanted = b.desc;
    // A constant goes into its layout (and f32) once, into memory that every
    // call made from the same weight shares.
    if (b.constant && !output &&
        (b.widened || b.roundedTo != DType::F32 || !(wanted == b.desc))) {
      std::shared_ptr<const dnnl::memory> constant =
          preparedConstant(b, wanted);
      call->args_[b.arg] = *constant;
      call->held_.push_back(std::move(constant));
      continue;
    }
    dnnl::memory user;
    if (b.roundedTo != DType::F32 && !output) {
      // Rounded into a copy: the source itself stays as it is.
      user = inScratch(b.desc);
      call->roundings_.push_back({static_cast<const float *>(b.data), user,
                                  b.desc.get_size() / sizeof(float),
                                  b.roundedTo});
    } else if (!b.widened) {
      user = dnnl::memory(b.desc, engine(), b.data);
      if (b.roundedTo != DType::F32) // a result, rounded in place
        call->roundings_.push_back(
            {nullptr, user, b.desc.get_size() / sizeof(float), b.roundedTo});
    } else {
      user = inScratch(b.desc);
      call->copies_.push_back({static_cast<uint16_t *>(b.data), b.storage, user,
                               b.desc.get_size() / sizeof(float), output});
    }
    if (wanted == b.desc && !b.staged) {
      call->args_[b.arg] = user;
      continue;
    }
    // The others are reordered before (operands) or after (the result)
    // every run, through the scratch.
    dnnl::memory staged = inScratch(wanted);
    if (output)
      call->afterRun_.push_back({dnnl::reorder(staged, user), staged, user});
    else
      call->beforeRun_.push_back({dnnl::reorder(user, staged), user, staged});
    call->args_[b.arg] = staged;
  }
  call->scratchBytes_ =
      call->inScratch_.empty() ? call->primitiveScratchBytes_ : scratchEnd;
  if (call->primitiveScratchBytes_) {
    call->scratch_ = dnnl::memory(scratch, engine(), nullptr);
    call->args_[DNNL_ARG_SCRATCHPAD] = call->scratch_;
  }
  return FastCallChoice{std::move(call), ""};
}

void widenOnThread(DType storage, const uint16_t *narrow, float *f32,
                   size_t count) {
  if (storage == DType::F16)
    convertF16ToF32(narrow, f32, count);
  else
    convertBF16ToF32(narrow, f32, count);
}

void narrowOnThread(DType storage, const float *f32, uint16_t *narrow,
                    size_t count) {
  if (storage == DType::F16)
    convertF32ToF16(f32, narrow, count);
  else
    convertF32ToBF16(f32, narrow, count);
}

void PrimitiveCall::round(const Rounding &r) {
  auto *to = static_cast<float *>(r.to.get_data_handle());
  roundThrough16Bit(r.type, r.from ? r.from : to, to,
                    static_cast<int64_t>(r.count));
}

void PrimitiveCall::widen(const F32Copy &c) {
  widen16Bit(c.storage, c.narrow, static_cast<float *>(c.f32.get_data_handle()),
             static_cast<int64_t>(c.count));
}

void PrimitiveCall::narrow(const F32Copy &c) {
  narrow16Bit(c.storage, static_cast<const float *>(c.f32.get_data_handle()),
              c.narrow, static_cast<int64_t>(c.count));
}

Status PrimitiveCall::run(void *scratch) {
  char *base = static_cast<char *>(scratch);
  try {
    for (ScratchMemory &m : inScratch_)
      m.memory.set_data_handle(base + m.offset);
    for (F32Copy &c : copies_)
      if (!c.output)
        widen(c);
    for (Rounding &r : roundings_)
      if (r.from)
        round(r);
    for (Reorder &r : beforeRun_)
      r.primitive.execute(stream_, r.from, r.to);
    if (primitiveScratchBytes_)
      scratch_.set_data_handle(scratch);
    primitive_.execute(stream_, args_);
    for (Reorder &r : afterRun_)
      r.primitive.execute(stream_, r.from, r.to);
    stream_.wait();
    for (F32Copy &c : copies_)
      if (c.output)
        narrow(c);
    for (Rounding &r : roundings_)
      if (!r.from)
        round(r);
  } catch (const dnnl::error &e) {
    return Status::error(name_ + ": " + e.what());
  }
  return Status::ok();
}

} // namespace mp::rt::cpu::onednn
