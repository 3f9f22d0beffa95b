//===- OneDnn.cpp - the CPU backend's oneDNN primitives -------------------===//
#include "OneDnn.h"

#include <algorithm>
#include <cstring>

namespace mp::rt::cpu::onednn {

const dnnl::engine &engine() {
  static const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

std::optional<dnnl::memory::data_type> dataTypeOf(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
  case DType::F32:
    return dt::f32;
  case DType::F16:
    return dt::f16;
  case DType::BF16:
    return dt::bf16;
  default:
    return std::nullopt;
  }
}

dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims,
                             dnnl::memory::data_type t) {
  return dnnl::memory::desc(dims, t, rowMajorStrides(dims));
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

dnnl::post_ops postOpsOf(Activation activation) {
  dnnl::post_ops ops;
  switch (activation) {
  case Activation::None:
    break;
  case Activation::Relu:
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    break;
  case Activation::Gelu:
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    break;
  case Activation::GeluTanh:
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
    break;
  }
  return ops;
}

std::string implementationName(const dnnl::primitive_desc_base &pd) {
  return std::string("onednn:") + pd.impl_info_str();
}

FastCallChoice PrimitiveCall::prepare(const dnnl::primitive_desc_base &pd,
                                      dnnl::primitive primitive,
                                      const std::vector<Binding> &buffers,
                                      bool constantWeights) {
  // oneDNN's reference implementations are generic C++ loops that the
  // project's own kernels beat.
  if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0)
    return referenceKernel("oneDNN has only its reference implementation (" +
                           implementationName(pd) + ")");
  auto call = std::unique_ptr<PrimitiveCall>(new PrimitiveCall());
  call->primitive_ = std::move(primitive);
  call->name_ = implementationName(pd);
  call->stream_ = dnnl::stream(engine());
  for (const Binding &b : buffers) {
    dnnl::memory user(b.desc, engine(), b.data);
    dnnl::memory::desc wanted =
        b.arg == DNNL_ARG_WEIGHTS ? pd.weights_desc() : b.desc;
    if (wanted == b.desc) {
      call->args_[b.arg] = user;
      continue;
    }
    // The primitive wants the weights in its own layout: memory the call
    // owns, filled now (a constant) or before every run.
    dnnl::memory own(wanted, engine());
    dnnl::reorder reorder(user, own);
    if (constantWeights) {
      reorder.execute(call->stream_, user, own);
      call->stream_.wait();
    } else {
      call->perRun_.push_back({reorder, user, own});
    }
    call->args_[b.arg] = own;
  }
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  call->scratchBytes_ = scratch.get_size();
  if (call->scratchBytes_) {
    call->scratch_ = dnnl::memory(scratch, engine(), nullptr);
    call->args_[DNNL_ARG_SCRATCHPAD] = call->scratch_;
  }
  return FastCallChoice{std::move(call), ""};
}

Status PrimitiveCall::run(void *scratch) {
  try {
    for (Reorder &r : perRun_)
      r.primitive.execute(stream_, r.from, r.to);
    if (scratchBytes_)
      scratch_.set_data_handle(scratch);
    primitive_.execute(stream_, args_);
    stream_.wait();
  } catch (const dnnl::error &e) {
    return Status::error(name_ + ": " + e.what());
  }
  return Status::ok();
}

} // namespace mp::rt::cpu::onednn
