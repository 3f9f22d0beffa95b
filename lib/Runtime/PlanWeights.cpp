//===- PlanWeights.cpp - external weights of a plan (format 1.2) ----------===//
//
// A plan may be saved without the bytes of some of its weights ("external"
// weights, docs/plan-format.md): externalizeWeights marks the weights that a
// source of named tensors (the model's initializers as .npy files, or a plan
// that has them) reproduces exactly, and fillExternalWeights puts the bytes
// back from such a source before the plan runs, checking names, shapes and
// the checksum recorded when the plan was saved.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

namespace mp::rt {

namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string &s) { return "'" + s + "'"; }

/// The file name stem of a weight in a directory source: the characters
/// other than letters, digits, '.', '-', '_' become '_' (as mp-run's
/// --output-dir names outputs).
std::string fileStem(const std::string &name) {
  std::string out = name.empty() ? std::string("_") : name;
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_')
      c = '_';
  if (out == "." || out == "..")
    out = "_";
  return out;
}

bool isInteger(DType t) {
  switch (t) {
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return true;
  default:
    return false;
  }
}

std::string typeText(DType t, const Shape &shape) {
  return describeTensorType(t, shape);
}

/// `tensor` as the bytes of weight `w`: its shape exactly, converted to its
/// dtype. An error (without the source's name) when it cannot be.
Result<HostTensor> asWeight(HostTensor tensor, const PlanWeight &w) {
  if (tensor.shape() != w.shape)
    return Status::error("expected " + typeText(w.dtype, w.shape) + ", got " +
                         typeText(tensor.dtype(), tensor.shape()));
  if (tensor.dtype() == w.dtype)
    return tensor;
  const bool floats = isFloat(tensor.dtype()) && isFloat(w.dtype);
  const bool ints = isInteger(tensor.dtype()) && isInteger(w.dtype);
  if (!floats && !ints)
    return Status::error("expected " + typeText(w.dtype, w.shape) + ", got " +
                         typeText(tensor.dtype(), tensor.shape()) +
                         " (only float to float and integer to integer are "
                         "converted)");
  HostTensor converted(w.dtype, w.shape);
  if (converted.byteCount() && !converted.data())
    return Status::error("out of memory converting to " +
                         typeText(w.dtype, w.shape));
  if (Status s = cpu::cast(tensor.view(), converted.view()); !s)
    return Status::error("cannot convert " +
                         typeText(tensor.dtype(), tensor.shape()) + " to " +
                         std::string(dtypeName(w.dtype)) + ": " + s.message());
  return converted;
}

std::string hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

uint64_t weightChecksum(const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

//===----------------------------------------------------------------------===//
// WeightSource
//===----------------------------------------------------------------------===//

Result<WeightSource> WeightSource::open(const std::string &path) {
  WeightSource source;
  source.path_ = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (fs::directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      const fs::path &p = it->path();
      if (p.extension() == ".npy")
        source.names_.push_back(p.stem().string());
    }
    if (ec)
      return Status::error(path + ": cannot read the directory: " +
                           ec.message());
    std::sort(source.names_.begin(), source.names_.end());
    if (source.names_.empty())
      return Status::error(path + ": the directory has no .npy files (one "
                                  "per weight, <name>.npy)");
    return source;
  }
  if (!fs::exists(path, ec))
    return Status::error(path + ": no such file or directory (the weights: "
                                "a directory of .npy files or a plan file)");
  Result<Plan> plan = loadPlan(path);
  if (!plan)
    return Status::error(plan.message() +
                         " (the weights: a directory of .npy files or a "
                         "plan file)");
  source.isPlan_ = true;
  for (const PlanWeight &w : plan->weights)
    if (w.data || !w.size)
      source.names_.push_back(w.name);
  std::sort(source.names_.begin(), source.names_.end());
  source.plan_ = std::make_shared<const Plan>(plan.take());
  return source;
}

std::string WeightSource::keyFor(const std::string &weightName) const {
  return isPlan_ ? weightName : fileStem(weightName);
}

Result<HostTensor> WeightSource::read(const std::string &key) const {
  if (!isPlan_) {
    std::string file = (fs::path(path_) / (key + ".npy")).string();
    Result<HostTensor> t = readNpy(file);
    if (!t)
      return Status::error(t.message());
    return t;
  }
  for (const PlanWeight &w : plan_->weights)
    if (w.name == key && (w.data || !w.size)) {
      HostTensor t(w.dtype, w.shape);
      if (t.byteCount() && !t.data())
        return Status::error(path_ + ": out of memory reading weight " +
                             quoted(key));
      if (w.size)
        std::memcpy(t.data(), w.data, w.size);
      return t;
    }
  return Status::error(path_ + ": the plan has no weight " + quoted(key) +
                       " with data");
}

//===----------------------------------------------------------------------===//
// Filling and externalizing
//===----------------------------------------------------------------------===//

namespace {

/// The plan's weights by source key; an error when two weights have one key
/// (two names that differ only in characters a file name cannot hold).
Result<std::map<std::string, size_t>> weightsByKey(const Plan &plan,
                                                   const WeightSource &source) {
  std::map<std::string, size_t> byKey;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    auto [it, inserted] = byKey.emplace(source.keyFor(plan.weights[i].name), i);
    if (!inserted)
      return Status::error(
          source.path() + ": weights " + quoted(plan.weights[it->second].name) +
          " and " + quoted(plan.weights[i].name) + " both map to the file " +
          quoted(it->first + ".npy"));
  }
  return byKey;
}

} // namespace

Result<FillWeightsReport> fillExternalWeights(Plan &plan,
                                              const WeightSource &source,
                                              const FillWeightsOptions &options) {
  auto fail = [&](const std::string &what) -> Result<FillWeightsReport> {
    return Status::error(source.path() + ": " + what);
  };
  Result<std::map<std::string, size_t>> byKey = weightsByKey(plan, source);
  if (!byKey)
    return Status::error(byKey.message());

  // Every name of the source is a weight of the plan.
  FillWeightsReport report;
  for (const std::string &key : source.names()) {
    auto it = byKey->find(key);
    if (it == byKey->end()) {
      std::string known;
      size_t listed = 0;
      for (const PlanWeight &w : plan.weights)
        if (w.external && listed++ < 5)
          known += (known.empty() ? "" : ", ") + w.name;
      return fail("unknown weight " + quoted(key) +
                  ": the plan has no weight of that name (its external "
                  "weights: " +
                  (known.empty() ? std::string("none") : known) +
                  (listed > 5 ? ", ..." : "") + ")");
    }
    if (!(plan.weights[it->second].external && !plan.weights[it->second].data))
      ++report.unused;
  }
  // Every external weight is in the source.
  std::vector<std::pair<size_t, HostTensor>> filled;
  std::vector<std::string> names(source.names());
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const PlanWeight &w = plan.weights[i];
    if (!w.external || w.data)
      continue;
    const std::string key = source.keyFor(w.name);
    if (!std::binary_search(names.begin(), names.end(), key))
      return fail("weight " + quoted(w.name) + " (" +
                  typeText(w.dtype, w.shape) +
                  ") is missing: the plan holds it as external" +
                  (key != w.name ? " (its file would be " + key + ".npy)"
                                 : std::string()));
    Result<HostTensor> t = source.read(key);
    if (!t)
      return Status::error(t.message());
    Result<HostTensor> bytes = asWeight(t.take(), w);
    if (!bytes)
      return fail("weight " + quoted(w.name) + ": " + bytes.message());
    uint64_t sum = weightChecksum(bytes->data(), bytes->byteCount());
    if (sum != w.checksum) {
      if (options.verifyChecksums)
        return fail("weight " + quoted(w.name) +
                    ": the values differ from those the plan was saved with "
                    "(checksum " + hex(sum) + ", the plan recorded " +
                    hex(w.checksum) +
                    "): not the weights the plan was compiled from");
      ++report.checksumDiffers;
    }
    report.bytes += w.size;
    filled.emplace_back(i, bytes.take());
  }
  // Everything checked: fill.
  for (auto &[i, tensor] : filled) {
    PlanWeight &w = plan.weights[i];
    w = PlanWeight::copyOf(w.name, w.dtype, w.shape, tensor.data(),
                           tensor.byteCount());
    ++report.filled;
  }
  return report;
}

Result<ExternalizeReport> externalizeWeights(Plan &plan,
                                             const WeightSource &source,
                                             uint64_t minBytes) {
  Result<std::map<std::string, size_t>> byKey = weightsByKey(plan, source);
  if (!byKey)
    return Status::error(byKey.message());
  std::vector<std::string> names(source.names());
  ExternalizeReport report;
  std::vector<std::pair<size_t, uint64_t>> chosen; // weight, checksum
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const PlanWeight &w = plan.weights[i];
    auto keep = [&] {
      ++report.kept;
      report.keptBytes += w.size;
    };
    if (w.external && !w.data) { // already external
      ++report.external;
      report.externalBytes += w.size;
      continue;
    }
    const std::string key = source.keyFor(w.name);
    if (w.size < minBytes || w.size == 0 ||
        !std::binary_search(names.begin(), names.end(), key)) {
      keep();
      continue;
    }
    // A splat takes one element in the file: nothing to gain.
    const size_t element = byteSize(w.dtype);
    bool splat = element && w.size >= 2 * element;
    for (size_t at = element; splat && at < w.size; at += element)
      splat = std::memcmp(w.data, static_cast<const uint8_t *>(w.data) + at,
                          element) == 0;
    if (splat) {
      keep();
      continue;
    }
    Result<HostTensor> t = source.read(key);
    if (!t)
      return Status::error(t.message());
    Result<HostTensor> bytes = asWeight(t.take(), w);
    if (!bytes) {
      report.notReproduced.push_back(quoted(w.name) + ": " + bytes.message());
      keep();
      continue;
    }
    if (bytes->byteCount() != w.size ||
        std::memcmp(bytes->data(), w.data, w.size) != 0) {
      report.notReproduced.push_back(
          quoted(w.name) + ": other bytes once converted to " +
          std::string(dtypeName(w.dtype)));
      keep();
      continue;
    }
    chosen.emplace_back(i, weightChecksum(w.data, w.size));
    ++report.external;
    report.externalBytes += w.size;
  }
  for (auto [i, sum] : chosen) {
    PlanWeight &w = plan.weights[i];
    w.external = true;
    w.checksum = sum;
    w.data = nullptr;
    w.owner.reset();
  }
  return report;
}

} // namespace mp::rt
