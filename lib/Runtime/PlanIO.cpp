//===- PlanIO.cpp - reading and writing plan files -----------------------===//
//
// A plan file (docs/plan-format.md) is
//
//   [0, 4 + L)      a size-prefixed FlatBuffer (Plan.fbs): the uint32 L, then
//                   L bytes whose bytes 4..7 are the identifier "MPPL";
//   [4 + L, D)      zero padding;
//   [D, D + S)      the weight data section, D = Plan.weight_data_offset, a
//                   multiple of 64, S = Plan.weight_data_size; every weight's
//                   bytes start at a multiple of 64 in it. It ends the file.
//
// The FlatBuffers code is generated from Plan.fbs by flatc at build time
// (lib/Runtime/CMakeLists.txt); nothing of it leaks into Plan.h.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Plan.h"

#include "PlanInternal.h"
#include "Plan_generated.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>

#if defined(__unix__) || defined(__APPLE__)
#define MP_PLAN_POSIX 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#include <fstream>
#endif

namespace mp::rt {

using namespace plan_detail;

namespace {

// Weights are raw little-endian bytes, used in place.
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) &&                \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
constexpr bool kLittleEndian = false;
#else
constexpr bool kLittleEndian = true;
#endif

static_assert(sizeof(kPlanFileIdentifier) == flatbuffers::kFileIdentifierLength + 1);

constexpr uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

std::string errnoText(int err) { return std::strerror(err); }

/// The elements of a vector of scalars. Copied as bytes: the verifier checks
/// only 4-byte alignment for a vector, so a corrupt file may hold a misaligned
/// vector of 8-byte elements (the host is little-endian, as the file).
template <typename T> std::vector<T> toVector(const flatbuffers::Vector<T> *v) {
  static_assert(std::is_arithmetic_v<T>);
  std::vector<T> out;
  if (v && v->size()) {
    out.resize(v->size());
    std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  }
  return out;
}

Shape toShape(const flatbuffers::Vector<int64_t> *v) { return toVector(v); }

/// Format 1.9's symbolic values. The powers are split evenly over the terms;
/// validatePlan reports a term without one power per symbol.
std::vector<PlanSymbolicValue> readSymbolicValues(
    const flatbuffers::Vector<flatbuffers::Offset<fb::SymbolicValue>> *list) {
  std::vector<PlanSymbolicValue> out;
  if (!list)
    return out;
  for (const fb::SymbolicValue *v : *list) {
    PlanSymbolicValue &value = out.emplace_back();
    value.index = v->index();
    value.attribute = v->attribute() ? v->attribute()->str() : "";
    std::vector<int64_t> coefficients = toVector(v->value()->coefficients());
    std::vector<uint8_t> powers = toVector(v->value()->powers());
    size_t perTerm =
        coefficients.empty() ? 0 : powers.size() / coefficients.size();
    if (perTerm * coefficients.size() != powers.size())
      perTerm = 0; // uneven: every term gets none (validatePlan says so)
    for (size_t t = 0; t < coefficients.size(); ++t)
      value.value.terms.push_back(
          {coefficients[t],
           std::vector<uint8_t>(powers.begin() + t * perTerm,
                                powers.begin() + (t + 1) * perTerm)});
  }
  return out;
}

std::string toString(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// Parses and validates the bytes [data, data + size) of a plan file, which
/// `owner` keeps alive (the weights view them). `data` is 64-byte aligned.
Result<Plan> parseBytes(const uint8_t *data, size_t size,
                        std::shared_ptr<const void> owner,
                        const std::string &name) {
  auto fail = [&](const std::string &what) -> Result<Plan> {
    return Status::error(name + ": " + what);
  };
  if (!kLittleEndian)
    return fail("plan files can only be used on little-endian hosts");
  if (size == 0)
    return fail("the file is empty");
  // Size prefix, root offset, identifier.
  constexpr size_t kHeader = 4 + 4 + flatbuffers::kFileIdentifierLength;
  if (size < kHeader)
    return fail("the file is too small (" + std::to_string(size) +
                " bytes) to be a plan file");
  if (std::memcmp(data + 8, kPlanFileIdentifier, 4) != 0)
    return fail("not a MixPrec plan file: bytes 8 to 11 are " +
                quoted(std::string_view(reinterpret_cast<const char *>(data) + 8, 4)) +
                ", a plan file has the identifier '" + kPlanFileIdentifier + "'");
  const uint32_t metaSize = flatbuffers::ReadScalar<uint32_t>(data);
  if (metaSize < kHeader - 4 ||
      metaSize >= FLATBUFFERS_MAX_BUFFER_SIZE - 4)
    return fail("the file is corrupt: its metadata size " +
                std::to_string(metaSize) + " is impossible");
  if (metaSize > size - 4)
    return fail("the file is truncated: it has " + std::to_string(size) +
                " bytes, its metadata alone need " +
                std::to_string(uint64_t(metaSize) + 4));
  const size_t fbSize = size_t(metaSize) + 4;
  // A well-formed buffer has fewer tables than 4-byte words: this bounds the
  // verifier's work on corrupt files whose offsets share tables.
  const auto maxTables = static_cast<flatbuffers::uoffset_t>(fbSize / 4 + 64);

  // The version first, from a verifier that only looks at the root table and
  // its fields 0 and 1, which every version keeps: a file of another major
  // version gets a version error rather than a verification failure.
  {
    flatbuffers::Verifier verifier(data, fbSize, 64, maxTables);
    const flatbuffers::uoffset_t root = verifier.VerifyOffset(4);
    if (!root)
      return fail("the file is corrupt: its root table offset is invalid");
    const auto *table =
        reinterpret_cast<const flatbuffers::Table *>(data + 4 + root);
    if (!table->VerifyTableStart(verifier) ||
        !table->VerifyField<uint32_t>(verifier, fb::Plan::VT_FORMAT_MAJOR, 4) ||
        !table->VerifyField<uint32_t>(verifier, fb::Plan::VT_FORMAT_MINOR, 4))
      return fail("the file is corrupt: its root table is invalid");
    uint32_t major = table->GetField<uint32_t>(fb::Plan::VT_FORMAT_MAJOR, 0);
    uint32_t minor = table->GetField<uint32_t>(fb::Plan::VT_FORMAT_MINOR, 0);
    if (major != kPlanFormatMajor)
      return fail(versionMismatchMessage(major, minor));
  }
  {
    flatbuffers::Verifier verifier(data, fbSize, 64, maxTables);
    if (!fb::VerifySizePrefixedPlanBuffer(verifier))
      return fail("the file is corrupt: its metadata (" +
                  std::to_string(fbSize) +
                  " bytes) fail the FlatBuffers verifier");
  }
  const fb::Plan *fbPlan = fb::GetSizePrefixedPlan(data);

  // The weight data section ends the file.
  const uint64_t dataOffset = fbPlan->weight_data_offset();
  const uint64_t dataSize = fbPlan->weight_data_size();
  if (dataOffset < fbSize)
    return fail("the file is corrupt: its weight data section would start at "
                "byte " + std::to_string(dataOffset) +
                ", inside the metadata (" + std::to_string(fbSize) + " bytes)");
  if (dataOffset % kPlanWeightAlignment)
    return fail("the file is corrupt: its weight data section starts at byte " +
                std::to_string(dataOffset) + ", not a multiple of " +
                std::to_string(kPlanWeightAlignment));
  if (dataOffset > size || dataSize > size - dataOffset)
    return fail("the file is truncated: it has " + std::to_string(size) +
                " bytes, but its weight data section is " +
                std::to_string(dataSize) + " bytes at byte " +
                std::to_string(dataOffset));
  if (dataSize < size - dataOffset)
    return fail("the file has " + std::to_string(size - dataOffset - dataSize) +
                " bytes of trailing garbage after its weight data section (" +
                std::to_string(dataSize) + " bytes at byte " +
                std::to_string(dataOffset) + ")");
  const uint8_t *section = data + dataOffset;

  Plan plan;
  plan.formatMajor = fbPlan->format_major();
  plan.formatMinor = fbPlan->format_minor();
  plan.producer = toString(fbPlan->producer());
  plan.modelName = toString(fbPlan->model_name());
  plan.arenaSize = fbPlan->arena_size();

  if (const auto *weights = fbPlan->weights()) {
    plan.weights.reserve(weights->size());
    for (flatbuffers::uoffset_t i = 0; i < weights->size(); ++i) {
      const fb::Weight *w = weights->Get(i);
      PlanWeight &out = plan.weights.emplace_back();
      out.name = w->name()->str();
      out.dtype = static_cast<DType>(w->dtype());
      out.shape = toShape(w->shape());
      const uint64_t offset = w->offset(), bytes = w->size();
      std::string what = "weight #" + std::to_string(i) + " " + quoted(out.name);
      // (1.2) An external weight's bytes are not in the file: they are
      // filled from the model's weights (fillExternalWeights).
      if (w->external()) {
        if (w->splat())
          return fail(what + " is both external and a splat");
        if (bytes != static_cast<size_t>(bytes))
          return fail(what + " is external with " + std::to_string(bytes) +
                      " bytes, more than this machine can address");
        out.size = static_cast<size_t>(bytes);
        out.external = true;
        out.checksum = w->checksum();
        continue;
      }
      if (offset % kPlanWeightAlignment)
        return fail(what + " starts at byte " + std::to_string(offset) +
                    " of the weight data section, not a multiple of " +
                    std::to_string(kPlanWeightAlignment));
      // A splat weight stores one element; the reader repeats it.
      const uint64_t element = byteSize(out.dtype);
      const uint64_t stored = w->splat() ? element : bytes;
      if (w->splat() && (element == 0 || bytes % element))
        return fail(what + " is a splat of " + std::to_string(bytes) +
                    " bytes, not a whole number of " +
                    dtypeString(out.dtype) + " elements");
      if (offset > dataSize || stored > dataSize - offset)
        return fail(what + " (" + std::to_string(stored) + " bytes at byte " +
                    std::to_string(offset) +
                    ") does not fit in the weight data section of " +
                    std::to_string(dataSize) + " bytes");
      out.size = static_cast<size_t>(bytes);
      if (!w->splat()) {
        out.data = section + offset;
        out.owner = owner;
        continue;
      }
      uint64_t physical = physicalMemoryBytes();
      if (bytes != static_cast<size_t>(bytes) || (physical && bytes > physical))
        return fail(what + " is a splat of " + std::to_string(bytes) +
                    " bytes, more than this machine's memory");
      std::shared_ptr<void> expanded;
      try {
        expanded = allocateAligned(static_cast<size_t>(bytes));
      } catch (const std::bad_alloc &) {
        return fail("out of memory expanding " + what + " (" +
                    std::to_string(bytes) + " bytes)");
      }
      auto *dst = static_cast<uint8_t *>(expanded.get());
      for (uint64_t at = 0; at < bytes; at += element)
        std::memcpy(dst + at, section + offset, element);
      out.data = expanded.get();
      out.owner = std::move(expanded);
    }
  }

  if (const auto *buffers = fbPlan->buffers()) {
    plan.buffers.reserve(buffers->size());
    for (flatbuffers::uoffset_t i = 0; i < buffers->size(); ++i) {
      const fb::Buffer *b = buffers->Get(i);
      PlanBuffer &out = plan.buffers.emplace_back();
      out.id = b->id();
      out.dtype = static_cast<DType>(b->dtype());
      out.shape = toShape(b->shape());
      auto storage = static_cast<uint8_t>(b->storage());
      if (storage > static_cast<uint8_t>(BufferStorage::Derived))
        return fail("buffer #" + std::to_string(i) + " (id " +
                    std::to_string(b->id()) + ") has an unknown storage kind " +
                    std::to_string(storage));
      out.storage = static_cast<BufferStorage>(storage);
      out.offset = b->offset();
      out.weight = b->weight();
      out.name = toString(b->name());
      out.symbolicShape = readSymbolicValues(b->symbolic_shape());
    }
  }

  auto readBindings = [&](const flatbuffers::Vector<
                              flatbuffers::Offset<fb::Binding>> *list,
                          std::vector<PlanBinding> &out) {
    if (!list)
      return;
    out.reserve(list->size());
    for (const fb::Binding *io : *list) {
      PlanBinding &b = out.emplace_back();
      b.name = io->name()->str();
      b.buffer = io->buffer();
      b.dtype = static_cast<DType>(io->dtype());
      b.shape = toShape(io->shape());
    }
  };
  readBindings(fbPlan->inputs(), plan.inputs);
  readBindings(fbPlan->outputs(), plan.outputs);

  if (const auto *calls = fbPlan->calls()) {
    plan.calls.reserve(calls->size());
    for (flatbuffers::uoffset_t i = 0; i < calls->size(); ++i) {
      const fb::Call *c = calls->Get(i);
      PlanCall &out = plan.calls.emplace_back();
      out.kind = c->kind()->str();
      out.operands = toVector(c->operands());
      out.results = toVector(c->results());
      out.workspaceSize = c->workspace_size();
      out.location = toString(c->location());
      out.atLoad = c->at_load();
      out.symbolicAttributes = readSymbolicValues(c->symbolic_attributes());
      const auto *attrs = c->attributes();
      if (!attrs)
        continue;
      out.attributes.reserve(attrs->size());
      for (const fb::Attribute *a : *attrs) {
        PlanAttr &attr = out.attributes.emplace_back();
        attr.name = a->name()->str();
        switch (a->value_type()) {
        case fb::AttrValue_IntAttr:
          attr.value = a->value_as_IntAttr()->value();
          break;
        case fb::AttrValue_FloatAttr:
          attr.value = a->value_as_FloatAttr()->value();
          break;
        case fb::AttrValue_StringAttr:
          attr.value = a->value_as_StringAttr()->value()->str();
          break;
        case fb::AttrValue_IntListAttr:
          attr.value = toVector(a->value_as_IntListAttr()->values());
          break;
        case fb::AttrValue_FloatListAttr:
          attr.value = toVector(a->value_as_FloatListAttr()->values());
          break;
        default:
          return fail(out.describe(i) + ": attribute " + quoted(attr.name) +
                      " has an unknown value type " +
                      std::to_string(static_cast<int>(a->value_type())));
        }
      }
    }
  }

  if (const auto *symbols = fbPlan->symbols())
    for (const fb::Symbol *sym : *symbols)
      plan.symbols.push_back({sym->name()->str(), sym->min(), sym->max()});

  if (const fb::TrainingInfo *t = fbPlan->training()) {
    PlanTrainingInfo &out = plan.training.emplace();
    out.dataInput = toString(t->data_input());
    out.labelInput = toString(t->label_input());
    out.lossOutput = toString(t->loss_output());
    out.predictionOutput = toString(t->prediction_output());
    out.skippedOutput = toString(t->skipped_output());
    out.scaleOutput = toString(t->scale_output());
    out.task = toString(t->task());
    out.epochsDone = t->epochs_done();
  }

  if (Status s = validatePlan(plan, name, /*allowUnfilledExternal=*/true); !s)
    return s;
  // Ids are a permutation of [0, n) now: let buffers[id].id == id.
  std::vector<PlanBuffer> byId(plan.buffers.size());
  for (PlanBuffer &b : plan.buffers)
    byId[b.id] = std::move(b);
  plan.buffers = std::move(byId);
  return plan;
}

/// parseBytes, turning exceptions (std::bad_alloc on absurd sizes) into
/// errors.
Result<Plan> parseGuarded(const uint8_t *data, size_t size,
                          std::shared_ptr<const void> owner,
                          const std::string &name) {
  try {
    return parseBytes(data, size, std::move(owner), name);
  } catch (const std::bad_alloc &) {
    return Status::error(name + ": out of memory while reading the plan");
  } catch (const std::exception &e) {
    return Status::error(name + ": " + e.what());
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The metadata FlatBuffer of `plan`, with `weightOffsets` (relative to the
/// weight data section) and a placeholder weight_data_offset.
/// Whether a weight has at least two elements, all with the same bytes.
bool isSplat(const PlanWeight &w) {
  size_t element = byteSize(w.dtype);
  if (!element || !w.data || w.size < 2 * element || w.size % element)
    return false;
  const auto *bytes = static_cast<const uint8_t *>(w.data);
  for (size_t at = element; at < w.size; at += element)
    if (std::memcmp(bytes, bytes + at, element) != 0)
      return false;
  return true;
}

void buildMetadata(flatbuffers::FlatBufferBuilder &fbb, const Plan &plan,
                   const std::vector<uint64_t> &weightOffsets,
                   const std::vector<bool> &splats, uint64_t dataOffset,
                   uint64_t dataSize) {
  auto optString = [&](const std::string &s) {
    return s.empty() ? flatbuffers::Offset<flatbuffers::String>()
                     : fbb.CreateString(s);
  };
  auto shape = [&](const Shape &s) { return fbb.CreateVector(s); };

  // Absent when empty: a static plan's file is as before format 1.9.
  auto symbolic = [&](const std::vector<PlanSymbolicValue> &values) {
    using List = flatbuffers::Offset<
        flatbuffers::Vector<flatbuffers::Offset<fb::SymbolicValue>>>;
    if (values.empty())
      return List();
    std::vector<flatbuffers::Offset<fb::SymbolicValue>> out;
    for (const PlanSymbolicValue &v : values) {
      std::vector<int64_t> coefficients;
      std::vector<uint8_t> powers;
      for (const PlanPolynomial::Term &t : v.value.terms) {
        coefficients.push_back(t.coefficient);
        powers.insert(powers.end(), t.powers.begin(), t.powers.end());
      }
      auto polynomial = fb::CreatePolynomial(
          fbb, fbb.CreateVector(coefficients), fbb.CreateVector(powers));
      out.push_back(fb::CreateSymbolicValue(
          fbb, v.index, optString(v.attribute), polynomial));
    }
    return fbb.CreateVector(out);
  };

  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  buffers.reserve(plan.buffers.size());
  for (const PlanBuffer &b : plan.buffers) {
    auto name = optString(b.name);
    auto dims = shape(b.shape);
    auto symbolicShape = symbolic(b.symbolicShape);
    buffers.push_back(
        fb::CreateBuffer(fbb, b.id, static_cast<int32_t>(b.dtype), dims,
                         static_cast<fb::Storage>(b.storage), b.offset,
                         b.weight, name, symbolicShape));
  }

  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  weights.reserve(plan.weights.size());
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const PlanWeight &w = plan.weights[i];
    auto name = fbb.CreateString(w.name);
    auto dims = shape(w.shape);
    const bool external = w.external && !w.data;
    weights.push_back(fb::CreateWeight(
        fbb, name, static_cast<int32_t>(w.dtype), dims,
        weightOffsets[i], w.size,
        splats[i], external, external ? w.checksum : 0));
  }

  auto bindings = [&](const std::vector<PlanBinding> &list) {
    std::vector<flatbuffers::Offset<fb::Binding>> out;
    for (const PlanBinding &io : list) {
      auto name = fbb.CreateString(io.name);
      auto dims = shape(io.shape);
      out.push_back(fb::CreateBinding(fbb, name, io.buffer,
                                      static_cast<int32_t>(io.dtype), dims));
    }
    return fbb.CreateVector(out);
  };
  auto inputs = bindings(plan.inputs);
  auto outputs = bindings(plan.outputs);

  std::vector<flatbuffers::Offset<fb::Call>> calls;
  calls.reserve(plan.calls.size());
  for (const PlanCall &c : plan.calls) {
    std::vector<flatbuffers::Offset<fb::Attribute>> attrs;
    for (const PlanAttr &a : c.attributes) {
      auto name = fbb.CreateString(a.name);
      fb::AttrValue type = fb::AttrValue_NONE;
      flatbuffers::Offset<void> value;
      if (const auto *v = std::get_if<int64_t>(&a.value)) {
        type = fb::AttrValue_IntAttr;
        value = fb::CreateIntAttr(fbb, *v).Union();
      } else if (const auto *v = std::get_if<double>(&a.value)) {
        type = fb::AttrValue_FloatAttr;
        // FlatBuffers leaves out a field equal to its default, compared with
        // ==: -0.0 would read back as +0.0.
        fbb.ForceDefaults(true);
        value = fb::CreateFloatAttr(fbb, *v).Union();
        fbb.ForceDefaults(false);
      } else if (const auto *v = std::get_if<std::string>(&a.value)) {
        type = fb::AttrValue_StringAttr;
        value = fb::CreateStringAttr(fbb, fbb.CreateString(*v)).Union();
      } else if (const auto *v = std::get_if<std::vector<int64_t>>(&a.value)) {
        type = fb::AttrValue_IntListAttr;
        value = fb::CreateIntListAttr(fbb, fbb.CreateVector(*v)).Union();
      } else if (const auto *v = std::get_if<std::vector<double>>(&a.value)) {
        type = fb::AttrValue_FloatListAttr;
        value = fb::CreateFloatListAttr(fbb, fbb.CreateVector(*v)).Union();
      }
      attrs.push_back(fb::CreateAttribute(fbb, name, type, value));
    }
    auto kind = fbb.CreateString(c.kind);
    auto operands = fbb.CreateVector(c.operands);
    auto results = fbb.CreateVector(c.results);
    auto attrVec = fbb.CreateVector(attrs);
    auto location = optString(c.location);
    auto symbolicAttributes = symbolic(c.symbolicAttributes);
    calls.push_back(fb::CreateCall(fbb, kind, operands, results,
                                   c.workspaceSize, attrVec, location, c.atLoad,
                                   symbolicAttributes));
  }

  flatbuffers::Offset<fb::TrainingInfo> training;
  if (const std::optional<PlanTrainingInfo> &t = plan.training) {
    auto dataInput = optString(t->dataInput);
    auto labelInput = optString(t->labelInput);
    auto lossOutput = optString(t->lossOutput);
    auto predictionOutput = optString(t->predictionOutput);
    auto skippedOutput = optString(t->skippedOutput);
    auto scaleOutput = optString(t->scaleOutput);
    auto task = optString(t->task);
    training = fb::CreateTrainingInfo(fbb, dataInput, labelInput, lossOutput,
                                      predictionOutput, skippedOutput,
                                      scaleOutput, task, t->epochsDone);
  }

  auto producer = optString(plan.producer);
  auto modelName = optString(plan.modelName);
  auto bufferVec = fbb.CreateVector(buffers);
  auto weightVec = fbb.CreateVector(weights);
  auto callVec = fbb.CreateVector(calls);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Symbol>>>
      symbolVec;
  if (plan.isDynamic()) {
    std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
    for (const PlanSymbol &sym : plan.symbols)
      symbols.push_back(
          fb::CreateSymbol(fbb, fbb.CreateString(sym.name), sym.min, sym.max));
    symbolVec = fbb.CreateVector(symbols);
  }
  // A plan with 1.1 contents (State buffers, training information) is
  // written as at least 1.1, whatever minor version it was read as.
  const uint32_t minor = std::max(plan.formatMinor, plan.requiredFormatMinor());
  auto root =
      fb::CreatePlan(fbb, plan.formatMajor, minor, producer, modelName,
                     plan.arenaSize, bufferVec, weightVec, inputs, outputs,
                     callVec, dataOffset, dataSize, training, symbolVec);
  fb::FinishSizePrefixedPlanBuffer(fbb, root);
}

/// Writes all of [data, data + size) to `f`.
bool writeAll(std::FILE *f, const void *data, size_t size) {
  return size == 0 || std::fwrite(data, 1, size, f) == size;
}

bool writeZeros(std::FILE *f, uint64_t count) {
  static const char zeros[kPlanWeightAlignment] = {};
  while (count) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(count, sizeof(zeros)));
    if (!writeAll(f, zeros, n))
      return false;
    count -= n;
  }
  return true;
}

} // namespace

Result<Plan> parsePlan(const void *data, size_t size, const std::string &name) {
  std::shared_ptr<void> copy;
  try {
    copy = allocateAligned(size);
  } catch (const std::bad_alloc &) {
    return Status::error(name + ": out of memory copying " +
                         std::to_string(size) + " bytes");
  }
  if (size)
    std::memcpy(copy.get(), data, size);
  const auto *bytes = static_cast<const uint8_t *>(copy.get());
  return parseGuarded(bytes, size, std::move(copy), name);
}

Result<Plan> loadPlan(const std::string &path) {
  auto fail = [&](const std::string &what) -> Result<Plan> {
    return Status::error(path + ": " + what);
  };
#ifdef MP_PLAN_POSIX
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open the plan file: " + errnoText(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return fail("cannot stat the plan file: " + errnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(S_ISDIR(st.st_mode) ? "is a directory, not a plan file"
                                    : "is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return parseGuarded(nullptr, 0, nullptr, path);
  }
  if (static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max()) {
    ::close(fd);
    return fail("the file is too large to map");
  }
  const auto size = static_cast<size_t>(st.st_size);
  // Read-only and private: the weights are used in place, and a process that
  // replaces the file with savePlan (rename) does not disturb the mapping.
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (map == MAP_FAILED)
    return fail("cannot map the plan file: " + errnoText(err));
  std::shared_ptr<const void> owner(
      map, [size](const void *p) { ::munmap(const_cast<void *>(p), size); });
  return parseGuarded(static_cast<const uint8_t *>(map), size, std::move(owner),
                      path);
#else
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return fail("cannot open the plan file");
  auto end = in.tellg();
  if (end < 0)
    return fail("cannot read the plan file");
  const auto size = static_cast<size_t>(end);
  std::shared_ptr<void> copy;
  try {
    copy = allocateAligned(size);
  } catch (const std::bad_alloc &) {
    return fail("out of memory reading the plan file");
  }
  in.seekg(0);
  if (size && !in.read(static_cast<char *>(copy.get()),
                       static_cast<std::streamsize>(size)))
    return fail("cannot read the plan file");
  const auto *bytes = static_cast<const uint8_t *>(copy.get());
  return parseGuarded(bytes, size, std::move(copy), path);
#endif
}

Status savePlan(const Plan &plan, const std::string &path,
                const SavePlanOptions &options) {
  auto fail = [&](const std::string &what) {
    return Status::error(path + ": " + what);
  };
  if (!kLittleEndian)
    return fail("plan files can only be written on little-endian hosts");
  if (path.empty())
    return Status::error("savePlan: the path is empty");
  if (options.validate) {
    if (Status s = validatePlan(plan, path, /*allowUnfilledExternal=*/true); !s)
      return s;
  } else {
    for (const PlanWeight &w : plan.weights)
      if (w.size && !w.data && !w.external)
        return fail("weight " + quoted(w.name) + " has no data");
  }

  // The weight data section: every weight at a multiple of 64; weights of
  // several equal elements are stored as one (splat).
  std::vector<uint64_t> weightOffsets, storedSizes;
  std::vector<bool> splats;
  weightOffsets.reserve(plan.weights.size());
  uint64_t dataSize = 0;
  for (const PlanWeight &w : plan.weights) {
    bool splat = isSplat(w);
    splats.push_back(splat);
    // An external weight (not filled) takes no bytes in the section.
    if (w.external && !w.data) {
      storedSizes.push_back(0);
      weightOffsets.push_back(kPlanExternalWeightOffset);
      continue;
    }
    storedSizes.push_back(splat ? byteSize(w.dtype) : w.size);
    dataSize = alignUp(dataSize, kPlanWeightAlignment);
    weightOffsets.push_back(dataSize);
    dataSize += storedSizes.back();
  }

  // weight_data_offset depends on the metadata's size: build with a
  // placeholder (non-zero, so that the field is stored), then patch it.
  flatbuffers::FlatBufferBuilder fbb(16384);
  try {
    buildMetadata(fbb, plan, weightOffsets, splats, kPlanWeightAlignment,
                  dataSize);
  } catch (const std::bad_alloc &) {
    return fail("out of memory building the plan metadata");
  }
  const size_t fbSize = fbb.GetSize();
  const uint64_t dataOffset = alignUp(fbSize, kPlanWeightAlignment);
  auto *root = flatbuffers::GetMutableRoot<flatbuffers::Table>(
      fbb.GetBufferPointer() + sizeof(flatbuffers::uoffset_t));
  if (!root->SetField<uint64_t>(fb::Plan::VT_WEIGHT_DATA_OFFSET, dataOffset,
                                0))
    return fail("internal error: the metadata lack weight_data_offset");

  // Write a temporary file next to `path` and rename it over `path`.
  static std::atomic<unsigned> counter{0};
#ifdef MP_PLAN_POSIX
  const std::string pid = std::to_string(::getpid());
#else
  const std::string pid = "0";
#endif
  std::string tmp;
  std::FILE *f = nullptr;
  int err = 0;
  for (int attempt = 0; attempt < 100 && !f; ++attempt) {
    tmp = path + ".tmp-" + pid + "-" + std::to_string(counter++);
    f = std::fopen(tmp.c_str(), "wbx"); // fails if it exists
    err = errno;
    if (!f && err != EEXIST)
      break;
  }
  if (!f)
    return fail("cannot create the temporary file " + quoted(tmp) + ": " +
                errnoText(err));
  bool ok = writeAll(f, fbb.GetBufferPointer(), fbSize) &&
            writeZeros(f, dataOffset - fbSize);
  uint64_t written = 0;
  for (size_t i = 0; ok && i < plan.weights.size(); ++i) {
    const PlanWeight &w = plan.weights[i];
    if (w.external && !w.data)
      continue; // not in the section
    ok = writeZeros(f, weightOffsets[i] - written) &&
         writeAll(f, w.data, storedSizes[i]);
    written = weightOffsets[i] + storedSizes[i];
  }
  if (ok)
    ok = std::fflush(f) == 0;
#ifdef MP_PLAN_POSIX
  if (ok)
    ok = ::fsync(::fileno(f)) == 0;
#endif
  err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return fail("cannot write the temporary file " + quoted(tmp) + ": " +
                errnoText(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    return fail("cannot rename the temporary file " + quoted(tmp) +
                " to the plan file: " + errnoText(err));
  }
  return Status::ok();
}

} // namespace mp::rt
