//===- Plan.cpp - the in-memory plan and its validation ------------------===//
//
// The rules checked here are listed in docs/plan-format.md ("Validation").
// PlanIO.cpp reads and writes plan files and calls validatePlan.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/DynamicShapes.h"

#include "PlanInternal.h"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_map>

namespace mp::rt {

//===----------------------------------------------------------------------===//
// Formatting helpers shared with PlanIO.cpp
//===----------------------------------------------------------------------===//

namespace plan_detail {

std::string quoted(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\\') {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string quotedIfOdd(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\\' || c == ' ' || c == '\'')
      return quoted(s);
  }
  return std::string(s);
}

std::string shapeString(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string dtypeString(DType t) {
  if (dtypeFromOnnx(static_cast<int32_t>(t)))
    return std::string(dtypeName(t));
  return "dtype code " + std::to_string(static_cast<int32_t>(t));
}

std::string typeString(DType t, const Shape &shape) {
  return dtypeString(t) + " " + shapeString(shape);
}

bool checkType(DType t, const Shape &shape, int64_t &elements, uint64_t &bytes,
               std::string &why) {
  if (!dtypeFromOnnx(static_cast<int32_t>(t))) {
    why = "dtype code " + std::to_string(static_cast<int32_t>(t)) +
          " is not an element type this runtime knows";
    return false;
  }
  bool hasZero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      why = "shape " + shapeString(shape) + " has dimension " +
            std::to_string(i) + " = " + std::to_string(shape[i]) +
            " (plans have static shapes: every dimension is >= 0)";
      return false;
    }
    hasZero |= shape[i] == 0;
  }
  // The product of the non-zero dims must fit even when a zero dim makes the
  // tensor empty: kernels compute strides from the dims ([0, 2^62, 100] has
  // no elements but a stride of 2^62 * 100).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0)
      continue;
    if (n > kMax / d) {
      why = "shape " + shapeString(shape) +
            " has more elements than fit in 64 bits";
      return false;
    }
    n *= d;
  }
  if (hasZero)
    n = 0;
  auto elementBytes = static_cast<int64_t>(byteSize(t));
  if (n > kMax / elementBytes) {
    why = typeString(t, shape) + " has more bytes than fit in 63 bits";
    return false;
  }
  elements = n;
  bytes = static_cast<uint64_t>(n * elementBytes);
  return true;
}

std::shared_ptr<void> allocateAligned(size_t size) {
  size_t rounded = (size + kPlanWeightAlignment - 1) / kPlanWeightAlignment *
                   kPlanWeightAlignment;
  if (rounded < size) // wrapped around
    throw std::bad_alloc();
  void *p = std::aligned_alloc(kPlanWeightAlignment,
                               rounded ? rounded : kPlanWeightAlignment);
  if (!p)
    throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void *q) { std::free(q); });
}

uint64_t physicalMemoryBytes() {
#if defined(__unix__) || defined(__APPLE__)
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
#else
  return 0;
#endif
}

} // namespace plan_detail

using namespace plan_detail;

//===----------------------------------------------------------------------===//
// Plan, PlanWeight, PlanCall
//===----------------------------------------------------------------------===//

PlanWeight PlanWeight::copyOf(std::string name, DType dtype, Shape shape,
                              const void *bytes, size_t size) {
  PlanWeight w;
  w.name = std::move(name);
  w.dtype = dtype;
  w.shape = std::move(shape);
  std::shared_ptr<void> storage = allocateAligned(size);
  if (size)
    std::memcpy(storage.get(), bytes, size);
  w.data = storage.get();
  w.size = size;
  w.owner = std::move(storage);
  return w;
}

const PlanAttrValue *PlanCall::attr(std::string_view name) const {
  for (const PlanAttr &a : attributes)
    if (a.name == name)
      return &a.value;
  return nullptr;
}

std::string PlanCall::describe(size_t index) const {
  std::string out = "call #" + std::to_string(index) + " (";
  out += kind.empty() ? std::string("no kind") : quotedIfOdd(kind);
  if (!location.empty())
    out += " at node " + quoted(location);
  return out + ")";
}

const PlanBuffer *Plan::buffer(uint32_t id) const {
  if (id < buffers.size() && buffers[id].id == id)
    return &buffers[id];
  for (const PlanBuffer &b : buffers)
    if (b.id == id)
      return &b;
  return nullptr;
}

uint64_t Plan::maxWorkspaceSize() const {
  uint64_t m = 0;
  for (const PlanCall &c : calls)
    m = std::max(m, c.workspaceSize);
  return m;
}

std::string stateName(const Plan &plan, const PlanBuffer &b) {
  if (!b.name.empty() || b.weight >= plan.weights.size())
    return b.name;
  return plan.weights[b.weight].name;
}

const PlanBinding *Plan::input(std::string_view name) const {
  for (const PlanBinding &b : inputs)
    if (b.name == name)
      return &b;
  return nullptr;
}

const PlanBinding *Plan::output(std::string_view name) const {
  for (const PlanBinding &b : outputs)
    if (b.name == name)
      return &b;
  return nullptr;
}

namespace {
/// Whether `c` applies an activation a 1.4 runtime refuses: a matmul's
/// other than none, relu and gelu; a convolution's gelu and gelu_tanh.
bool hasFormat15Activation(const PlanCall &c) {
  if (c.kind == "cublaslt.matmul") {
    const std::string *e = c.attrAs<std::string>("epilogue");
    return e && *e != "none" && *e != "relu" && *e != "gelu";
  }
  if (c.kind == "cudnn.conv_fwd") {
    const std::string *a = c.attrAs<std::string>("activation");
    return a && (*a == "gelu" || *a == "gelu_tanh");
  }
  return false;
}
} // namespace

uint32_t Plan::requiredFormatMinor() const {
  // Data-parallel steps, and checkpoints that say how far their run got.
  for (const PlanCall &c : calls)
    if (c.kind == "comm.all_reduce")
      return 12;
  if (training && training->epochsDone > 0)
    return 12;
  // GELU's gradients, as calls or as steps of fused programs, and the
  // activation gradients of a matmul's epilogue (with its aux operand).
  for (const PlanCall &c : calls) {
    if (c.kind == "kernel.layer_norm_grad")
      return 11;
    if (const std::string *e = c.attrAs<std::string>("epilogue");
        e && c.kind == "cublaslt.matmul" &&
        (*e == "relu_grad" || *e == "gelu_grad" || *e == "gelu_tanh_grad"))
      return 11;
    const std::string *fn = c.attrAs<std::string>("fn");
    const std::string *program = c.attrAs<std::string>("program");
    if ((fn && (*fn == "gelu_grad" || *fn == "gelu_tanh_grad")) ||
        (program && (program->find("gelu_grad(") != std::string::npos ||
                     program->find("gelu_tanh_grad(") != std::string::npos)))
      return 11;
  }
  // float8 e8m0 buffers or weights, and kernel.cast's round_mode other
  // than "up" (a 1.9 runtime ignores the attribute: casts round as "up").
  for (const PlanBuffer &b : buffers)
    if (b.dtype == DType::F8E8M0)
      return 10;
  for (const PlanWeight &w : weights)
    if (w.dtype == DType::F8E8M0)
      return 10;
  for (const PlanCall &c : calls)
    if (const std::string *mode = c.attrAs<std::string>("round_mode");
        mode && *mode != "up")
      return 10;
  if (isDynamic())
    return 9;
  uint32_t fused = 0;
  // A matmul that also sums op(B)'s rows (a bias gradient).
  for (const PlanCall &c : calls)
    if (const int64_t *grad = c.attrAs<int64_t>("has_bias_grad");
        grad && *grad && c.kind == "cublaslt.matmul")
      return 8;
  for (const PlanCall &c : calls) {
    if (c.atLoad)
      return 7;
    // ReLU's gradient, as a call or a step of a fused program.
    const std::string *fn = c.attrAs<std::string>("fn");
    const std::string *program = c.attrAs<std::string>("program");
    if ((fn && *fn == "relu_grad") ||
        (program && program->find("relu_grad(") != std::string::npos))
      return 7;
  }
  for (const PlanBuffer &b : buffers)
    if (b.storage == BufferStorage::Derived)
      return 7;
  for (const PlanCall &c : calls)
    if (c.kind == "kernel.rms_norm" || c.kind == "kernel.group_norm" ||
        c.kind == "kernel.scaled_softmax")
      return 6;
  for (const PlanCall &c : calls)
    if (hasFormat15Activation(c))
      return 5;
  for (const PlanCall &c : calls) {
    if (c.kind == "kernel.attention")
      return 4;
    if (const int64_t *residual = c.attrAs<int64_t>("has_residual");
        residual && *residual && c.kind == "cudnn.conv_fwd")
      return 4;
    if (c.kind == "kernel.fused_elementwise")
      fused = 3;
  }
  if (fused)
    return fused;
  for (const PlanWeight &w : weights)
    if (w.external && !w.data)
      return 2;
  if (training)
    return 1;
  for (const PlanBuffer &b : buffers)
    if (b.storage == BufferStorage::State)
      return 1;
  return 0;
}

//===----------------------------------------------------------------------===//
// validatePlan
//===----------------------------------------------------------------------===//

namespace {

std::string bufferName(const PlanBuffer &b) {
  std::string out = "buffer " + std::to_string(b.id);
  if (!b.name.empty())
    out += " (" + quoted(b.name) + ")";
  return out;
}

std::string bindingNames(const std::vector<PlanBinding> &list) {
  std::string out;
  for (const PlanBinding &b : list)
    out += (out.empty() ? "" : ", ") + quotedIfOdd(b.name);
  return out.empty() ? "none" : out;
}

/// The rules for Plan::training (docs/plan-format.md, "Training plans").
std::string checkTraining(const Plan &plan) {
  const PlanTrainingInfo &t = *plan.training;
  const std::string what = "training information: ";
  auto find = [&](const std::string &name, bool isInput, const char *field,
                  bool required, const PlanBinding *&out) -> std::string {
    out = nullptr;
    if (name.empty())
      return required ? what + "the " + field + " is missing" : "";
    out = isInput ? plan.input(name) : plan.output(name);
    if (out)
      return "";
    return what + field + " " + quoted(name) + " is not " +
           (isInput ? "an input" : "an output") + " of the plan (its " +
           (isInput ? "inputs: " : "outputs: ") +
           bindingNames(isInput ? plan.inputs : plan.outputs) + ")";
  };
  const PlanBinding *data, *label, *loss, *prediction, *skipped, *scale;
  std::string why;
  if (!(why = find(t.dataInput, true, "data_input", true, data)).empty() ||
      !(why = find(t.labelInput, true, "label_input", true, label)).empty() ||
      !(why = find(t.lossOutput, false, "loss_output", true, loss)).empty() ||
      !(why = find(t.predictionOutput, false, "prediction_output", false,
                   prediction))
           .empty() ||
      !(why = find(t.skippedOutput, false, "skipped_output", false, skipped))
           .empty() ||
      !(why = find(t.scaleOutput, false, "scale_output", false, scale)).empty())
    return why;
  if (t.task != PlanTrainingInfo::kTaskClassification &&
      t.task != PlanTrainingInfo::kTaskRegression)
    return what + "task " + quoted(t.task) + " is neither '" +
           PlanTrainingInfo::kTaskClassification + "' nor '" +
           PlanTrainingInfo::kTaskRegression + "'";
  if (data == label)
    return what + "data_input and label_input are both " + quoted(t.dataInput);
  if (data->shape.empty() || data->shape[0] < 1)
    return what + "data_input " + quoted(t.dataInput) + " is " +
           typeString(data->dtype, data->shape) +
           ": it needs a batch dimension of at least 1 first";
  if (label->shape.empty() || label->shape[0] != data->shape[0])
    return what + "label_input " + quoted(t.labelInput) + " is " +
           typeString(label->dtype, label->shape) + ", but data_input " +
           quoted(t.dataInput) + " is " + typeString(data->dtype, data->shape) +
           ": the labels need the same batch dimension first";
  auto oneElement = [&](const PlanBinding *b, const char *field,
                        bool needFloat) -> std::string {
    if (!b)
      return "";
    if (numElements(b->shape) != 1 || (needFloat && !isFloat(b->dtype)))
      return what + field + " " + quoted(b->name) + " is " +
             typeString(b->dtype, b->shape) + ", but it must be " +
             (needFloat ? "one float element" : "one element");
    return "";
  };
  if (!(why = oneElement(loss, "loss_output", true)).empty() ||
      !(why = oneElement(skipped, "skipped_output", false)).empty() ||
      !(why = oneElement(scale, "scale_output", false)).empty())
    return why;
  return "";
}

} // namespace

Status validatePlan(const Plan &plan, const std::string &name,
                    bool allowUnfilledExternal) {
  auto fail = [&](const std::string &what) {
    return Status::error(name + ": " + what);
  };

  if (plan.formatMajor != kPlanFormatMajor)
    return fail(versionMismatchMessage(plan.formatMajor, plan.formatMinor));

  // Weights first: buffers refer to them.
  std::vector<int64_t> weightElements(plan.weights.size());
  std::unordered_map<std::string_view, size_t> weightNames;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const PlanWeight &w = plan.weights[i];
    std::string what = "weight #" + std::to_string(i);
    if (w.name.empty())
      return fail(what + " has no name");
    auto [it, inserted] = weightNames.emplace(w.name, i);
    if (!inserted)
      return fail("weights #" + std::to_string(it->second) + " and #" +
                  std::to_string(i) + " are both named " + quoted(w.name));
    what += " " + quoted(w.name);
    std::string why;
    uint64_t bytes = 0;
    if (!checkType(w.dtype, w.shape, weightElements[i], bytes, why))
      return fail(what + ": " + why);
    if (w.size != bytes)
      return fail(what + " has " + std::to_string(w.size) + " bytes, but " +
                  typeString(w.dtype, w.shape) + " needs " +
                  std::to_string(bytes));
    if (w.external && !w.data) {
      if (allowUnfilledExternal)
        continue;
      size_t count = 0;
      uint64_t total = 0;
      for (const PlanWeight &other : plan.weights)
        if (other.external && !other.data) {
          ++count;
          total += other.size;
        }
      return fail(what + " (" + typeString(w.dtype, w.shape) +
                  ") is external: the plan was saved without its bytes" +
                  (count > 1 ? " (nor those of " + std::to_string(count - 1) +
                                   (count > 2 ? " more weights, "
                                              : " more weight, ") +
                                   std::to_string(total) + " bytes in all)"
                             : std::string()) +
                  "; give the model's weights (mp-run --weights=DIR|FILE, "
                  "fillExternalWeights) to run it");
    }
    if (w.size && !w.data)
      return fail(what + " has no data");
  }

  // Buffers: ids are a permutation of [0, n).
  const size_t n = plan.buffers.size();
  if (n > std::numeric_limits<uint32_t>::max())
    return fail("the plan has more than 2^32 - 1 buffers");
  std::vector<int64_t> position(n, -1); // id -> index in plan.buffers
  // weight -> the first buffer (index in plan.buffers) that uses it.
  std::vector<int64_t> weightUser(plan.weights.size(), -1);
  // State name (stateName) -> index in plan.buffers.
  std::unordered_map<std::string, size_t> stateNames;
  for (size_t i = 0; i < n; ++i) {
    const PlanBuffer &b = plan.buffers[i];
    if (b.id >= n)
      return fail("buffer #" + std::to_string(i) + " has id " +
                  std::to_string(b.id) + ", but the plan has " +
                  std::to_string(n) + " buffers (ids 0 to " +
                  std::to_string(static_cast<int64_t>(n) - 1) + ")");
    if (position[b.id] >= 0)
      return fail("buffers #" + std::to_string(position[b.id]) + " and #" +
                  std::to_string(i) + " both have id " + std::to_string(b.id));
    position[b.id] = static_cast<int64_t>(i);
    std::string what = bufferName(b);
    std::string why;
    int64_t elements = 0;
    uint64_t bytes = 0;
    if (!checkType(b.dtype, b.shape, elements, bytes, why))
      return fail(what + ": " + why);
    switch (b.storage) {
    case BufferStorage::Arena:
      if (b.offset % byteSize(b.dtype))
        return fail(what + ": arena offset " + std::to_string(b.offset) +
                    " is not a multiple of the element size " +
                    std::to_string(byteSize(b.dtype)) + " of " +
                    dtypeString(b.dtype));
      if (b.offset > plan.arenaSize || bytes > plan.arenaSize - b.offset)
        return fail(what + " (" + typeString(b.dtype, b.shape) + ", " +
                    std::to_string(bytes) + " bytes at arena offset " +
                    std::to_string(b.offset) + ") does not fit in the arena of " +
                    std::to_string(plan.arenaSize) + " bytes");
      break;
    case BufferStorage::Weight:
    case BufferStorage::State: {
      const bool state = b.storage == BufferStorage::State;
      if (b.weight >= plan.weights.size())
        return fail(what + (state ? " (a state)" : "") + " refers to weight #" +
                    std::to_string(b.weight) + ", but the plan has " +
                    std::to_string(plan.weights.size()) + " weights");
      const PlanWeight &w = plan.weights[b.weight];
      if (w.dtype != b.dtype || weightElements[b.weight] != elements)
        return fail(what + " (" + typeString(b.dtype, b.shape) +
                    ") does not match its weight #" + std::to_string(b.weight) +
                    " " + quoted(w.name) + " (" + typeString(w.dtype, w.shape) +
                    (state ? "): a state buffer has its initial weight's dtype "
                             "and number of elements"
                           : "): a weight buffer has the weight's dtype and "
                             "number of elements"));
      // A state's initial weight is its own: planWithState replaces it.
      int64_t &user = weightUser[b.weight];
      if (user >= 0) {
        const PlanBuffer &other = plan.buffers[user];
        if (state || other.storage == BufferStorage::State) {
          const PlanBuffer &s = state ? b : other;
          const PlanBuffer &o = state ? other : b;
          return fail(bufferName(s) + " is a state initialised from weight #" +
                      std::to_string(b.weight) + " " + quoted(w.name) +
                      ", which " + bufferName(o) +
                      " uses too (a state buffer's initial weight is used by "
                      "no other buffer)");
        }
      } else {
        user = static_cast<int64_t>(i);
      }
      if (state) {
        auto [it, fresh] = stateNames.emplace(stateName(plan, b), i);
        if (!fresh)
          return fail(bufferName(plan.buffers[it->second]) + " and " +
                      bufferName(b) + " are both states named " +
                      quoted(it->first) +
                      " (states are found by name: a State buffer's name, or "
                      "its initial weight's name when it has none, is unique)");
      }
      break;
    }
    case BufferStorage::Derived:
      break; // its writer at load is checked with the calls
    default:
      return fail(what + " has an unknown storage kind " +
                  std::to_string(static_cast<int>(b.storage)));
    }
  }
  auto lookup = [&](uint32_t id) -> const PlanBuffer * {
    return id < n ? &plan.buffers[position[id]] : nullptr;
  };

  // Graph inputs and outputs.
  auto checkBindings = [&](const std::vector<PlanBinding> &list,
                           const char *kind, bool isInput) -> Status {
    std::unordered_map<std::string_view, size_t> names;
    std::unordered_map<uint32_t, size_t> buffers;
    for (size_t i = 0; i < list.size(); ++i) {
      const PlanBinding &io = list[i];
      if (io.name.empty())
        return fail(std::string(kind) + " #" + std::to_string(i) +
                    " has no name");
      std::string what = std::string(kind) + " " + quoted(io.name);
      auto [it, inserted] = names.emplace(io.name, i);
      if (!inserted)
        return fail(std::string(kind) + "s #" + std::to_string(it->second) +
                    " and #" + std::to_string(i) + " are both named " +
                    quoted(io.name));
      const PlanBuffer *b = lookup(io.buffer);
      if (!b)
        return fail(what + " uses buffer " + std::to_string(io.buffer) +
                    ", which does not exist");
      if (io.dtype != b->dtype || io.shape != b->shape)
        return fail(what + " is declared " + typeString(io.dtype, io.shape) +
                    ", but its " + bufferName(*b) + " is " +
                    typeString(b->dtype, b->shape));
      if (isInput) {
        if (b->storage == BufferStorage::Derived)
          return fail(what + " uses " + bufferName(*b) +
                      ", which is made at load (inputs are written: they "
                      "must be arena or state buffers)");
        if (b->storage == BufferStorage::Weight)
          return fail(what + " uses " + bufferName(*b) + ", which holds weight " +
                      quoted(plan.weights[b->weight].name) +
                      " (inputs are written: they must be arena or state "
                      "buffers)");
        auto [bit, fresh] = buffers.emplace(io.buffer, i);
        if (!fresh)
          return fail(what + " uses " + bufferName(*b) + ", like input " +
                      quoted(list[bit->second].name));
      }
    }
    return Status::ok();
  };
  if (Status s = checkBindings(plan.inputs, "input", true); !s)
    return s;
  if (Status s = checkBindings(plan.outputs, "output", false); !s)
    return s;

  // Calls. A Derived buffer is written by one call at load, and read (at
  // load) only after it.
  std::vector<bool> madeAtLoad(n, false);
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &c = plan.calls[i];
    if (c.kind.empty())
      return fail(c.describe(i) + " has no kind");
    for (uint32_t id : c.operands) {
      const PlanBuffer *b = lookup(id);
      if (!b)
        return fail(c.describe(i) + " uses buffer " + std::to_string(id) +
                    ", which does not exist");
      if (c.atLoad && b->storage != BufferStorage::Weight &&
          !(b->storage == BufferStorage::Derived && madeAtLoad[id]))
        return fail(c.describe(i) + " runs at load but reads " +
                    bufferName(*b) +
                    (b->storage == BufferStorage::Derived
                         ? ", which no earlier call at load writes"
                         : ", which is neither a weight nor made at load"));
      if (!c.atLoad && b->storage == BufferStorage::Derived && !madeAtLoad[id])
        return fail(c.describe(i) + " reads " + bufferName(*b) +
                    ", which is made at load, but no call at load writes it");
    }
    for (uint32_t id : c.results) {
      const PlanBuffer *b = lookup(id);
      if (!b)
        return fail(c.describe(i) + " writes buffer " + std::to_string(id) +
                    ", which does not exist");
      if (c.atLoad != (b->storage == BufferStorage::Derived))
        return fail(c.describe(i) + (c.atLoad ? " runs at load and " : " ") +
                    "writes " + bufferName(*b) +
                    (c.atLoad ? ", which is not made at load (a call at load "
                                "writes only Derived buffers)"
                              : ", which is made at load (only calls at load "
                                "write it)"));
      if (c.atLoad && madeAtLoad[id])
        return fail(c.describe(i) + " writes " + bufferName(*b) +
                    ", which an earlier call at load wrote (a buffer made at "
                    "load has one writer)");
      if (c.atLoad)
        madeAtLoad[id] = true;
      if (b->storage == BufferStorage::Weight)
        return fail(c.describe(i) + " writes " + bufferName(*b) +
                    ", which holds weight " +
                    quoted(plan.weights[b->weight].name) +
                    " (weights are read-only)");
    }
    std::unordered_map<std::string_view, size_t> attrs;
    for (size_t k = 0; k < c.attributes.size(); ++k) {
      const PlanAttr &a = c.attributes[k];
      if (a.name.empty())
        return fail(c.describe(i) + ": attribute #" + std::to_string(k) +
                    " has no name");
      if (!attrs.emplace(a.name, k).second)
        return fail(c.describe(i) + " has two attributes named " +
                    quoted(a.name));
      if (a.value.valueless_by_exception())
        return fail(c.describe(i) + ": attribute " + quoted(a.name) +
                    " has no value");
    }
  }

  if (plan.training)
    if (std::string why = checkTraining(plan); !why.empty())
      return fail(why);
  if (std::string why = checkPlanSymbols(plan); !why.empty())
    return fail(why);
  return Status::ok();
}

namespace plan_detail {
std::string versionMismatchMessage(uint32_t major, uint32_t minor) {
  std::string ours = std::to_string(kPlanFormatMajor);
  return "plan format version " + std::to_string(major) + "." +
         std::to_string(minor) + ", this runtime reads " + ours + ".x (" +
         ours + "." + std::to_string(kPlanFormatMinor) +
         "; later " + ours + ".x files load without their new fields)";
}
} // namespace plan_detail

} // namespace mp::rt
