//===- Plan.h - plan files: what the runtime executes -------------*- C++ -*-===//
//
// A plan is a compiled model: a static memory plan (an activation arena and
// the buffers placed in it), the weights, the graph inputs and outputs, and
// the library calls / kernels to run, in order. The compiler writes it as a
// plan file (.mpplan) with savePlan; the runtime loads it with loadPlan.
//
// The file is a size-prefixed FlatBuffer (schema lib/Runtime/Plan.fbs, file
// identifier "MPPL") followed by a 64-byte aligned weight data section that is
// used in place from the memory-mapped file. docs/plan-format.md describes
// the format, its versioning and what the loader validates.
//
// This header does not expose FlatBuffers: Plan is a plain C++ mirror of the
// schema.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_PLAN_H
#define MP_RUNTIME_PLAN_H

#include "mp/Runtime/DType.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mp::rt {

/// The plan format version this runtime writes. It reads every file of the
/// same major version (a newer minor version only adds fields, which it
/// ignores) and rejects other major versions.
constexpr uint32_t kPlanFormatMajor = 1;
constexpr uint32_t kPlanFormatMinor = 0;
/// The FlatBuffers file identifier (bytes 8..11 of a plan file).
constexpr char kPlanFileIdentifier[] = "MPPL";
/// Alignment, in the file and hence in memory, of every weight's bytes.
constexpr size_t kPlanWeightAlignment = 64;

/// Where the bytes of a buffer live.
enum class BufferStorage : uint8_t {
  Arena = 0,  ///< in the activation arena, at PlanBuffer::offset
  Weight = 1, ///< they are the bytes of weight PlanBuffer::weight (read-only)
};

/// A tensor of the static memory plan.
struct PlanBuffer {
  /// Unique, in [0, number of buffers). Calls and bindings use ids.
  uint32_t id = 0;
  DType dtype = DType::F32;
  Shape shape; ///< static: every dimension >= 0
  BufferStorage storage = BufferStorage::Arena;
  /// Byte offset into the arena (Arena); a multiple of the element size.
  /// Buffers whose live ranges do not overlap may share bytes.
  uint64_t offset = 0;
  /// Index into Plan::weights (Weight): same dtype and element count.
  uint32_t weight = 0;
  /// Optional: the ONNX value name, for messages.
  std::string name;

  int64_t numElements() const { return rt::numElements(shape); }
  uint64_t byteCount() const { return numElements() * byteSize(dtype); }
};

/// A constant tensor: raw little-endian bytes, 16-bit types as 16 bits.
///
/// The bytes are a view [data, data + size) that stays valid while `owner`
/// (shared by copies of the weight) lives: for a loaded plan, the memory
/// mapping of the file, in which the bytes are 64-byte aligned.
struct PlanWeight {
  std::string name; ///< unique, not empty
  DType dtype = DType::F32;
  Shape shape;
  const void *data = nullptr;
  size_t size = 0; ///< bytes: numElements() * byteSize(dtype)
  std::shared_ptr<const void> owner;

  /// A weight that owns a 64-byte aligned copy of `size` bytes at `bytes`.
  static PlanWeight copyOf(std::string name, DType dtype, Shape shape,
                           const void *bytes, size_t size);
  int64_t numElements() const { return rt::numElements(shape); }
  template <typename T> const T *as() const {
    return static_cast<const T *>(data);
  }
};

/// A graph input or output: a named buffer, with its dtype and shape (which
/// must be the buffer's). Plans are for static shapes: there is no -1.
struct PlanBinding {
  std::string name;
  uint32_t buffer = 0;
  DType dtype = DType::F32;
  Shape shape;
};

/// A typed attribute value: int, float, string, int list, float list.
/// Floats are stored as f64, so f32 values round-trip exactly.
using PlanAttrValue = std::variant<int64_t, double, std::string,
                                   std::vector<int64_t>, std::vector<double>>;

struct PlanAttr {
  std::string name;
  PlanAttrValue value;
};

/// One library call (cuBLASLt, cuDNN) or project kernel.
struct PlanCall {
  std::string kind; ///< "cublaslt.matmul", "cudnn.conv_fwd", "kernel.add", ...
  std::vector<uint32_t> operands; ///< buffer ids
  std::vector<uint32_t> results;  ///< buffer ids (never weights)
  uint64_t workspaceSize = 0;     ///< scratch bytes the call needs
  std::vector<PlanAttr> attributes; ///< names unique
  std::string location; ///< optional: the ONNX node name

  /// The attribute `name`, or null.
  const PlanAttrValue *attr(std::string_view name) const;
  /// The attribute `name` if it has type T (int64_t, double, std::string,
  /// std::vector<int64_t>, std::vector<double>), or null.
  template <typename T> const T *attrAs(std::string_view name) const {
    const PlanAttrValue *v = attr(name);
    return v ? std::get_if<T>(v) : nullptr;
  }
  /// "call #3 (cudnn.conv_fwd at node 'conv1')" style description, as used in
  /// the loader's messages (index is the call's position).
  std::string describe(size_t index) const;
};

/// A compiled model, as in a plan file.
struct Plan {
  /// The version of the file it was read from (savePlan writes these; keep
  /// the defaults).
  uint32_t formatMajor = kPlanFormatMajor;
  uint32_t formatMinor = kPlanFormatMinor;
  std::string producer;  ///< what wrote it, e.g. "mp-compile 0.1.0"
  std::string modelName; ///< the source model
  uint64_t arenaSize = 0; ///< bytes of the activation arena (the peak)
  /// loadPlan returns them sorted by id, so that buffers[id].id == id.
  std::vector<PlanBuffer> buffers;
  std::vector<PlanWeight> weights;
  std::vector<PlanBinding> inputs;
  std::vector<PlanBinding> outputs;
  std::vector<PlanCall> calls; ///< in execution order

  /// The buffer with this id, or null.
  const PlanBuffer *buffer(uint32_t id) const;
  /// The largest workspace of any call (0 without calls).
  uint64_t maxWorkspaceSize() const;
};

/// Loads a plan file: memory-maps it, verifies the FlatBuffer, checks the
/// identifier and the version, and validates the plan (validatePlan and the
/// layout of the weight data). The weights view the mapping, which the plan
/// (and its copies) keep alive. Messages start with "<path>: ".
Result<Plan> loadPlan(const std::string &path);

/// Like loadPlan, for a plan file's bytes in memory; the plan's weights view a
/// 64-byte aligned copy of them. `name` is used in messages.
Result<Plan> parsePlan(const void *data, size_t size,
                       const std::string &name = "<memory>");

/// Checks the semantic rules of docs/plan-format.md ("Validation"): buffer
/// ids unique and in range, arena placement, known dtypes, static shapes whose
/// sizes do not overflow, weight sizes, and that bindings and calls refer to
/// existing buffers. Messages start with "<name>: ".
Status validatePlan(const Plan &plan, const std::string &name = "<plan>");

struct SavePlanOptions {
  /// Run validatePlan first and write nothing if it fails. Only tests that
  /// need invalid files turn this off.
  bool validate = true;
};

/// Writes a plan file: into a temporary file next to `path`, then renamed
/// over it, so that `path` is either left as it was or is the whole new plan
/// (readers that mapped the old file keep seeing it). Messages start with
/// "<path>: ".
Status savePlan(const Plan &plan, const std::string &path,
                const SavePlanOptions &options = {});

} // namespace mp::rt

#endif // MP_RUNTIME_PLAN_H
