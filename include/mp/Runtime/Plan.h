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
// Format 1.1 adds what training plans need: State buffers (persistent,
// mutable memory initialised from a weight, kept across runs by the
// executor) and PlanTrainingInfo (which inputs and outputs mp-run --train
// feeds and reads). Format 1.2 adds external weights: a plan saved without
// the bytes of some weights, which come from the model's weights by name
// when it is run (fillExternalWeights, mp-run --weights).
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
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mp::rt {

/// The newest plan format version this runtime reads and writes. It reads
/// every file of the same major version (a newer minor version only adds
/// fields, which it ignores) and rejects other major versions. 1.1 added
/// State buffers and the training information, 1.2 external weights, 1.3
/// fused calls (kernel.fused_elementwise, whose kind a 1.2 runtime refuses
/// by name), 1.4 fused attention (kernel.attention, refused by name before)
/// and convolutions with a residual, 1.5 more activations (a matmul's
/// gelu_tanh, silu, sigmoid, tanh and hard_swish epilogues, a convolution's
/// gelu and gelu_tanh: names a 1.4 runtime refuses), 1.6 RMS and group
/// norms and scaled softmaxes (kernel.rms_norm, kernel.group_norm,
/// kernel.scaled_softmax, refused by name before), 1.7 calls at load and
/// the Derived buffers they write (BufferStorage::Derived, which a 1.6
/// runtime refuses as an unknown storage kind), 1.8 a matmul's bias_grad
/// output (the sums of one operand over K; has_bias_grad, absent before),
/// 1.9 dynamic shapes, 1.10 float8 e8m0, 1.11 GELU's gradient functions,
/// a matmul's activation-gradient epilogues with their aux operand and
/// kernel.layer_norm_grad (names a 1.10 runtime refuses), 1.12 the
/// collectives of data-parallel training steps (comm.all_reduce) and the
/// training information's epochs_done; 1.0 files still load.
/// savePlan writes the lowest minor version that the contents need, and at
/// least Plan::formatMinor.
constexpr uint32_t kPlanFormatMajor = 1;
constexpr uint32_t kPlanFormatMinor = 12;
/// What a new Plan's formatMinor says: plans without external weights are
/// written as 1.1 files, as before 1.2.
constexpr uint32_t kPlanFormatMinorDefault = 1;
/// (Format 1.2.) The `offset` an external weight has in the file: outside
/// any weight data section, so that a 1.0 or 1.1 reader rejects the weight
/// instead of reading other bytes.
constexpr uint64_t kPlanExternalWeightOffset = ~uint64_t(63);
/// The FlatBuffers file identifier (bytes 8..11 of a plan file).
constexpr char kPlanFileIdentifier[] = "MPPL";
/// Alignment, in the file and hence in memory, of every weight's bytes.
constexpr size_t kPlanWeightAlignment = 64;

/// Where the bytes of a buffer live.
enum class BufferStorage : uint8_t {
  Arena = 0,  ///< in the activation arena, at PlanBuffer::offset
  Weight = 1, ///< they are the bytes of weight PlanBuffer::weight (read-only)
  /// (Format 1.1.) Persistent and mutable: memory of its own (never in the
  /// arena, never shared with another buffer), initialised with the bytes of
  /// weight PlanBuffer::weight when an executor is created and kept across
  /// runs. Calls may write it (in place: a call that updates it lists it in
  /// its results and reads the current contents).
  State = 2,
  /// (Format 1.7.) Made at load: memory of its own (never in the arena),
  /// written once, when an executor is created, by the calls at load
  /// (PlanCall::atLoad) from weights and other Derived buffers, and
  /// read-only on every run. Executors of one plan may share it.
  Derived = 3,
};

/// A tensor of the static memory plan.
/// A dimension a dynamic-shape plan (format 1.9) takes at run time, from the
/// inputs, and the range it was compiled for.
struct PlanSymbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

/// An integer given by the plan's symbols: the sum over the terms of
/// coefficient * product of symbols[i]^powers[i].
struct PlanPolynomial {
  struct Term {
    int64_t coefficient = 0;
    std::vector<uint8_t> powers; ///< one per plan symbol
  };
  std::vector<Term> terms;

  /// Its value for the symbols' values; nullopt when it overflows int64.
  std::optional<int64_t> evaluate(const std::vector<int64_t> &values) const;
  /// Spelled with the symbols' names, e.g. "2*batch*seq + 4".
  std::string str(const std::vector<PlanSymbol> &symbols) const;
  /// The symbol it is (a single term 1 * symbol), or -1.
  int symbolIndex() const;
};

/// A buffer dim or an integer (list) attribute element of a dynamic-shape
/// plan that changes with its symbols.
struct PlanSymbolicValue {
  uint32_t index = 0;    ///< the dim, or the attribute's element
  std::string attribute; ///< a call's: the attribute's name
  PlanPolynomial value;
};

struct PlanBuffer {
  /// Unique, in [0, number of buffers). Calls and bindings use ids.
  uint32_t id = 0;
  DType dtype = DType::F32;
  Shape shape; ///< static: every dimension >= 0
  BufferStorage storage = BufferStorage::Arena;
  /// Byte offset into the arena (Arena); a multiple of the element size.
  /// Buffers whose live ranges do not overlap may share bytes.
  uint64_t offset = 0;
  /// Index into Plan::weights (Weight: the bytes; State: the initial value):
  /// same dtype and element count. A State buffer's weight is its own (no
  /// other buffer uses it).
  uint32_t weight = 0;
  /// Optional: the ONNX value name, for messages.
  std::string name;
  /// Dynamic-shape plans: the dims that change with the symbols (`shape`
  /// holds them at the symbols' maxima). A Weight buffer smaller than its
  /// weight reads the weight's leading corner.
  std::vector<PlanSymbolicValue> symbolicShape;

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
  /// (Format 1.2.) The plan file does not hold the bytes (`data` is null):
  /// they come from the model's weights, by `name`, through
  /// fillExternalWeights before the plan can run (validatePlan refuses an
  /// external weight without data). Filling clears it.
  bool external = false;
  /// With `external`: weightChecksum of the bytes the plan was saved with;
  /// the bytes given for it must have it.
  uint64_t checksum = 0;

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
  /// (Format 1.7.) Runs once, when an executor is created, not on every
  /// run: it reads only Weight and Derived buffers and writes only Derived
  /// buffers (each written by exactly one call at load, before any call
  /// reads it).
  bool atLoad = false;
  /// Dynamic-shape plans: the integer attribute elements that change with
  /// the symbols (`attributes` hold them at the symbols' maxima).
  std::vector<PlanSymbolicValue> symbolicAttributes;

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

/// (Format 1.1.) How mp-run --train feeds a training plan and reads its
/// results: names of the plan's graph inputs and outputs. A training plan
/// runs one training step per run: it reads a batch from `dataInput` and
/// `labelInput` and updates its State buffers (parameters, optimizer and
/// loss-scale state).
struct PlanTrainingInfo {
  std::string dataInput;  ///< required: the batch [batch, sample dims...]
  std::string labelInput; ///< required: the batch's labels or targets
  std::string lossOutput; ///< required: the step's loss, one float element
  /// Optional ("" when absent): the predictions (classification: scores or
  /// probabilities over the last dim, for the training accuracy).
  std::string predictionOutput;
  /// Optional: one element, non-zero when the step was skipped (dynamic loss
  /// scaling found an overflow).
  std::string skippedOutput;
  std::string scaleOutput; ///< optional: the loss scale, one element
  std::string task; ///< required: kTaskClassification or kTaskRegression
  /// (Format 1.12.) A checkpoint's progress: the epochs its run had
  /// finished (mp-run --train --resume goes on from the next one); 0 for a
  /// plan that has not trained.
  uint32_t epochsDone = 0;

  static constexpr const char *kTaskClassification = "classification";
  static constexpr const char *kTaskRegression = "regression";
  bool isClassification() const { return task == kTaskClassification; }
};

/// A compiled model, as in a plan file.
struct Plan {
  /// The version of the file it was read from (savePlan writes these; keep
  /// the defaults).
  uint32_t formatMajor = kPlanFormatMajor;
  uint32_t formatMinor = kPlanFormatMinorDefault;
  std::string producer;  ///< what wrote it, e.g. "mp-compile 0.1.0"
  std::string modelName; ///< the source model
  uint64_t arenaSize = 0; ///< bytes of the activation arena (the peak)
  /// loadPlan returns them sorted by id, so that buffers[id].id == id.
  std::vector<PlanBuffer> buffers;
  std::vector<PlanWeight> weights;
  std::vector<PlanBinding> inputs;
  std::vector<PlanBinding> outputs;
  std::vector<PlanCall> calls; ///< in execution order
  /// (Format 1.1.) Present in training plans.
  std::optional<PlanTrainingInfo> training;
  /// Format 1.9: a dynamic-shape plan's symbols (DynamicShapes.h). Empty: a
  /// static plan.
  std::vector<PlanSymbol> symbols;

  /// The buffer with this id, or null.
  const PlanBuffer *buffer(uint32_t id) const;
  /// The largest workspace of any call (0 without calls).
  uint64_t maxWorkspaceSize() const;
  /// The input / output binding named `name`, or null.
  const PlanBinding *input(std::string_view name) const;
  const PlanBinding *output(std::string_view name) const;
  /// The minor format version the plan's contents need: 2 with external
  /// weights, 1 with State buffers or training information, else 0.
  /// savePlan writes at least this.
  uint32_t requiredFormatMinor() const;
  bool isDynamic() const { return !symbols.empty(); }
};

/// The name of a State buffer: its own name, or its initial weight's name
/// when it has none. validatePlan checks that state names are unique;
/// CpuExecutor::readState / writeState and checkpoints use them.
std::string stateName(const Plan &plan, const PlanBuffer &buffer);

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
/// sizes do not overflow, weight sizes, State buffers' initial weights, that
/// bindings and calls refer to existing buffers, and that the training
/// information names existing bindings. Messages start with "<name>: ".
/// An external weight that has not been filled is an error (the plan cannot
/// run without it) unless `allowUnfilledExternal` (loadPlan, savePlan).
Status validatePlan(const Plan &plan, const std::string &name = "<plan>",
                    bool allowUnfilledExternal = false);

//===----------------------------------------------------------------------===//
// External weights (format 1.2)
//===----------------------------------------------------------------------===//

/// The checksum of an external weight: FNV-1a, 64 bits, over the bytes.
uint64_t weightChecksum(const void *data, size_t size);

/// The tensors that external weights are filled from (or made external
/// with), by weight name.
class WeightSource {
public:
  /// A directory of .npy files (`<name>.npy`, the characters of the name
  /// other than letters, digits, '.', '-', '_' replaced by '_'), or a plan
  /// file (its weights that have data, by name: a plan saved with them).
  static Result<WeightSource> open(const std::string &path);
  /// The names it has (for a directory: the file names without ".npy").
  const std::vector<std::string> &names() const { return names_; }
  /// The key under which the weight `weightName` is looked up: its file
  /// name stem in a directory, the name itself otherwise.
  std::string keyFor(const std::string &weightName) const;
  /// The tensor of key `key` (one of names()); messages name its file.
  Result<HostTensor> read(const std::string &key) const;
  const std::string &path() const { return path_; }

private:
  bool isPlan_ = false;
  std::string path_;
  std::vector<std::string> names_;
  std::shared_ptr<const Plan> plan_;
};

struct FillWeightsOptions {
  /// Refuse bytes whose checksum differs from the one the plan was saved
  /// with (values other than those the plan was compiled with).
  bool verifyChecksums = true;
};

struct FillWeightsReport {
  size_t filled = 0;          ///< external weights filled
  uint64_t bytes = 0;         ///< their bytes
  size_t unused = 0;          ///< source tensors of weights the plan holds
  size_t checksumDiffers = 0; ///< filled with other values (not verified)
};

/// Fills every external weight of `plan` from `source`: the tensor of its
/// name, with the weight's shape exactly, converted to the weight's dtype
/// (float to float rounds to nearest even, integer to integer; other
/// conversions are errors) and, unless turned off, with the checksum the
/// plan recorded. Every external weight must be in the source, and every
/// tensor of the source must name a weight of the plan (one that the plan
/// holds itself is left as it is and counted as unused). On an error the
/// plan is unchanged. Messages start with "<source path>: ".
Result<FillWeightsReport> fillExternalWeights(
    Plan &plan, const WeightSource &source,
    const FillWeightsOptions &options = {});

struct ExternalizeReport {
  size_t external = 0; ///< weights made external
  uint64_t externalBytes = 0;
  size_t kept = 0; ///< weights the plan keeps
  uint64_t keptBytes = 0;
  /// Kept weights of at least minBytes that the source has but does not
  /// reproduce exactly (another shape, or other bytes once converted: a
  /// padded or folded weight), as "'name': why".
  std::vector<std::string> notReproduced;
};

/// Makes external every weight of `plan` of at least `minBytes` bytes (splat
/// weights excepted: they take one element in the file) whose bytes the
/// source reproduces exactly: its tensor of the weight's name, of the
/// weight's shape, converted to the weight's dtype as fillExternalWeights
/// converts it, gives the same bytes. Their data are dropped and their
/// checksums recorded; savePlan then writes a format 1.2 plan without them.
/// Other weights are kept. Messages start with "<source path>: ".
Result<ExternalizeReport> externalizeWeights(Plan &plan,
                                             const WeightSource &source,
                                             uint64_t minBytes = 0);

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
