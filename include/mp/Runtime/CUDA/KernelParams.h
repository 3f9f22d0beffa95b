//===- KernelParams.h - parameters of the CUDA backend's kernels --*- C++
//-*-===//
//
// Plain structs that the host-side planning (CudaPlanning.h) fills in and the
// CUDA kernels (lib/Runtime/CUDA/*.cu) read: every decision that can be made
// on the host (broadcast strides, merged dimensions, window geometry, which
// loop a reduction runs, launch sizes) is made there and tested without a
// GPU; the kernels only index.
//
// This header is included by nvcc and by the host compiler: fixed-size
// arrays, no STL, no CUDA types. Dtypes are mp::rt::DType codes (ONNX
// TensorProto codes) as int32_t. Pointers are device addresses.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CUDA_KERNELPARAMS_H
#define MP_RUNTIME_CUDA_KERNELPARAMS_H

#include <cstdint>

namespace mp::rt::cuda {

/// The most dimensions a kernel indexes after merging (elementwise, cast,
/// transpose, window copies, reductions). Plans with more (rare: merging
/// removes most) are refused at create() time.
constexpr int kMaxDims = 8;
/// The most inputs of one kernel.elementwise call on the GPU.
constexpr int kMaxEwInputs = 8;
/// The most spatial dimensions of pooling on the GPU.
constexpr int kMaxSpatial = 5;

/// How an elementwise kernel computes: in f32 (f32, f16, bf16 data), f64,
/// 64-bit signed integers (integer and bool data but u64), 64-bit unsigned
/// integers (u64 data), or on raw elements (where, identity: no
/// arithmetic, any dtype). Integer pow computes in f64 whatever the
/// integer compute type says.
enum EwCompute : int32_t {
  kComputeF32 = 0,
  kComputeF64 = 1,
  kComputeInt = 2,
  kComputeRaw = 3,
  kComputeU64 = 4,
};

/// The functions of kernel.elementwise as the GPU kernels switch on them:
/// kEw<Enumerator> for each entry of ElementwiseFunctions.def, in its order
/// (so the code is the mp::rt::cpu::ElementwiseFn value), then kEwClip1:
/// clip of x alone, with alpha = min and beta = max.
enum EwOp : int32_t {
#define MP_ELEMENTWISE_FN(Enumerator, ...) kEw##Enumerator,
#include "mp/Runtime/ElementwiseFunctions.def"
  kEwClip1,
  kEwOpCount
};

/// numpy broadcasting as a loop: y's dims (size-1 dims dropped, dims that
/// every operand walks contiguously merged) and each operand's stride per
/// dim in elements (0 where it is broadcast).
struct BroadcastLoop {
  int32_t rank = 1;
  int64_t dims[kMaxDims] = {1};
  int64_t strides[kMaxEwInputs][kMaxDims] = {};
};

struct EwParams {
  int32_t op = kEwIdentity;
  int32_t compute = kComputeF32;
  int32_t numInputs = 0;
  int32_t inDtype[kMaxEwInputs] = {};
  int32_t outDtype = 0;
  /// 1: every input has y's shape (index i is element i everywhere).
  int32_t contiguous = 0;
  /// Raw kernels (where, identity): the element size in bytes.
  int32_t elemSize = 0;
  double alpha = 0, beta = 0;
  int64_t n = 0; ///< y's elements
  BroadcastLoop loop;
  const void *in[kMaxEwInputs] = {};
  void *out = nullptr;
};

/// kernel.fused_elementwise (mp/Runtime/FusedProgram.h): at most this many
/// steps, and arguments per step (the runtime's limits).
constexpr int kMaxFusedSteps = 32;
constexpr int kMaxFusedStepArgs = 4;

/// One step of a fused program: an EwOp on f32 values (kEwClip1 for a clip
/// of one argument); args[j] < kMaxEwInputs is that input, otherwise the
/// result of step args[j] - kMaxEwInputs.
struct FusedStepParams {
  int32_t op = kEwIdentity;
  int32_t numArgs = 1;
  int32_t args[kMaxFusedStepArgs] = {};
  float alpha = 0, beta = 0;
};

/// The inputs, y and the broadcast loop as an elementwise call has them
/// (io.op, io.compute, io.alpha, io.beta unused), and the steps. Every value
/// is f32 in registers; y is rounded once at the store.
struct FusedEwParams {
  EwParams io;
  int32_t numSteps = 0;
  FusedStepParams steps[kMaxFusedSteps];
};

/// kernel.cast: n elements of inDtype to outDtype, with the CPU's rules.
struct CastParams {
  int32_t inDtype = 0, outDtype = 0;
  /// For float8 results (mp/Runtime/NarrowTypes.h); roundMode (a
  /// narrow::RoundMode) for float8 e8m0 ones.
  bool saturate = true;
  int32_t roundMode = 0;
  int64_t n = 0;
  const void *in = nullptr;
  void *out = nullptr;
};

/// y[i] = x[base + offset(i)]: transposes, slices and window copies (pad
/// with zeros, crop): y's (merged) dims; for each, x's stride and the offset
/// of y's index 0 along it in x (window copies: positions outside
/// [0, xDims) read 0). With `scatter` the roles swap: x is read densely and
/// element i goes to y[base + offset(i)] (concatenation): dims are x's and
/// xStrides y's.
struct GatherCopyParams {
  int32_t rank = 1;
  int32_t elemSize = 4;
  /// 1: bounds-checked window copy (start may be negative, xDims given).
  int32_t window = 0;
  int32_t scatter = 0;
  int64_t n = 0;
  int64_t base = 0;
  int64_t dims[kMaxDims] = {1};
  int64_t xStrides[kMaxDims] = {};
  int64_t start[kMaxDims] = {};
  int64_t xDims[kMaxDims] = {};
  const void *in = nullptr;
  void *out = nullptr;
};

enum ReduceOp : int32_t {
  kRedSum = 0,
  kRedMean,
  kRedMax,
  kRedMin,
  kRedProd,
  kRedL1,
  kRedL2,
  kRedLogSum,
  kRedSumSquare,
  kRedArgMax,
  kRedArgMin,
  kRedLogSumExp, ///< max + log(sum exp(x - max)), as the CPU
};

/// kernel.reduce: y (ySize elements, dense) over the kept dims of x; each
/// output reduces `count` elements over the reduced dims. Kept dims: y's
/// index decomposed over keptDims gives x's base offset by keptStrides;
/// reduced dims: the index r in [0, count) decomposed over reducedDims
/// gives the offset by reducedStrides. With blockPerOutput each output is
/// one thread block (the reduced elements are contiguous in x: coalesced),
/// else one thread per output (neighbouring outputs are neighbours in x).
struct ReduceParams {
  int32_t op = kRedSum;
  int32_t dtype = 0;    ///< x's dtype
  int32_t outDtype = 0; ///< y's (x's, or i64 for argmax/argmin)
  int32_t keptRank = 0, reducedRank = 0;
  int32_t blockPerOutput = 0;
  int32_t selectLast = 0; ///< argmax/argmin: the last extreme index
  int64_t ySize = 0, count = 0;
  int64_t keptDims[kMaxDims] = {}, keptStrides[kMaxDims] = {};
  int64_t reducedDims[kMaxDims] = {}, reducedStrides[kMaxDims] = {};
  const void *in = nullptr;
  void *out = nullptr;
};

/// Softmax / log-softmax along an axis: [outer, len, inner].
struct SoftmaxParams {
  int32_t dtype = 0;
  int32_t log = 0;
  int64_t outer = 0, len = 0, inner = 0;
  const void *in = nullptr;
  void *out = nullptr;
  /// kernel.scaled_softmax: x * scale + mask (mask broadcast to x's `rank`
  /// dims by maskStrides, 0 along repeated dims; maskDtype 0: no mask).
  float scale = 1.0f;
  int32_t maskDtype = 0, rank = 0;
  int64_t dims[kMaxDims] = {}, maskStrides[kMaxDims] = {};
  const void *mask = nullptr;
};

/// Pooling (NCHW or NHWC; kMaxSpatial spatial dims at most). One output
/// element per thread (forward), or one output window per thread adding
/// into an f32 / f64 accumulator (backward).
struct PoolParams {
  int32_t dtype = 0;
  int32_t isMax = 1;
  int32_t countIncludePad = 0;
  int32_t nhwc = 0;
  int32_t k = 0; ///< spatial dims
  int64_t n = 0, c = 0;
  int64_t in[kMaxSpatial] = {}, out[kMaxSpatial] = {}, ker[kMaxSpatial] = {};
  int64_t stride[kMaxSpatial] = {}, dil[kMaxSpatial] = {};
  int64_t padB[kMaxSpatial] = {}, padE[kMaxSpatial] = {};
  int64_t inSize = 1, outSize = 1; ///< spatial positions
  const void *x = nullptr;
  void *y = nullptr;          ///< forward: y; backward: unused
  int64_t *indices = nullptr; ///< forward max, optional (i64, NCHW)
  const void *dy = nullptr;   ///< backward
  void *acc = nullptr;        ///< backward: f32 (or f64) accumulator, x's shape
};

/// A per-channel view of an activation tensor: element i is in channel
/// (i / inner) % c, and [outer, c, inner] is the whole tensor (NCHW:
/// outer = N, inner = spatial; NHWC / rank 2: inner = 1).
struct ChannelGeom {
  int64_t outer = 0, c = 0, inner = 0;
};

/// The epilogue of matmul / convolution when it is not fused into the
/// library call: y = act(acc + bias[channel]) rounded once to y's dtype.
/// acc is f32 (or f64), y of outDtype; acc may be y itself (f32 / f64 y).
enum EpilogueAct : int32_t {
  kActNone = 0,
  kActRelu = 1,
  kActGelu = 2, ///< exact (erf)
  kActClip = 3, ///< min(max(v, clipMin), clipMax) (convolutions)
  // As the elementwise functions of the same names:
  kActSilu = 4,
  kActSigmoid = 5,
  kActTanh = 6,
  kActHardSwish = 7,
  kActGeluTanh = 8, ///< 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3)))
  // Matmuls' activation gradients: v times the activation's derivative at
  // aux[i] (the activation's forward input; no bias).
  kActReluGrad = 9,      ///< v where aux > 0, else 0
  kActGeluGrad = 10,     ///< v (Phi(aux) + aux phi(aux))
  kActGeluTanhGrad = 11, ///< v times the tanh form's derivative at aux
};
struct EpilogueParams {
  int32_t act = kActNone;
  float clipMin = 0, clipMax = 0; ///< kActClip's bounds
  int32_t accDtype = 1; ///< f32 or f64
  int32_t outDtype = 1;
  int32_t biasDtype = 0; ///< 0: no bias
  /// Convolutions: y's shape and layout, added before the activation (0:
  /// none).
  int32_t residualDtype = 0;
  int32_t auxDtype = 0; ///< the activation gradients' aux (y's shape)
  ChannelGeom geom;     ///< the bias's channel of each element
  const void *acc = nullptr;
  const void *bias = nullptr;
  const void *residual = nullptr;
  const void *aux = nullptr;
  void *out = nullptr;
};

/// Batch normalization (own kernels, NCHW or NHWC, rank >= 2): the per-channel
/// statistics and coefficients live in an f32/f64 scratch block.
struct BatchNormParams {
  int32_t xDtype = 0;
  int32_t scaleDtype = 0, biasDtype = 0, meanDtype = 0, varDtype = 0;
  int32_t runMeanDtype = 0, runVarDtype = 0;
  int32_t dyDtype = 0, dxDtype = 0, dscaleDtype = 0, dbiasDtype = 0;
  double epsilon = 1e-5, momentum = 0.9;
  ChannelGeom geom;
  const void *x = nullptr, *scale = nullptr, *bias = nullptr;
  const void *mean = nullptr, *var = nullptr; ///< inference / running input
  const void *dy = nullptr;
  void *y = nullptr, *runMean = nullptr, *runVar = nullptr;
  void *dx = nullptr, *dscale = nullptr, *dbias = nullptr;
  /// Scratch: per channel, float shift (mean) and float factor (a) for the
  /// normalisation, and doubles for the backward.
  float *chanMean = nullptr, *chanFactor = nullptr, *chanBias = nullptr;
  double *chanD = nullptr; ///< backward (and channels-last training): 4
                           ///< doubles per channel
  /// Channels last (geom.inner == 1): the statistics are summed over
  /// `rowSlices` slices of the rows in parallel (coalesced: a warp reads 32
  /// adjacent channels), 2 doubles per slice and channel in `partial`.
  int32_t rowSlices = 0;
  double *partial = nullptr;
  /// Synchronised over the ranks of a data-parallel step (sync_ranks): each
  /// pass's per-channel sums (2 doubles per channel) in `chanSum`, added up
  /// over the ranks between the passes; `ranks` batches make the count.
  double *chanSum = nullptr;
  int32_t ranks = 1;
};

/// Losses over [N, C, inner] scores with [N, inner] targets.
struct LossParams {
  int32_t inDtype = 0;     ///< input / scores (float)
  int32_t targetDtype = 0; ///< i32 / i64
  int32_t weightDtype = 0; ///< 0: no weight
  int32_t dlossDtype = 0;
  int32_t outDtype = 0;
  int32_t reduction = 2; ///< 0 none, 1 sum, 2 mean
  int32_t hasIgnore = 0;
  int64_t ignoreIndex = 0;
  int64_t n = 0, c = 0, inner = 0;
  const void *input = nullptr, *target = nullptr, *weight = nullptr;
  const void *dloss = nullptr;
  void *out = nullptr;
  double *scratch = nullptr; ///< the denominator (mean)
};

/// kernel.gather: y[o, i, j] = data[o, idx[i], j] over [outer, n, inner].
struct GatherParams {
  int32_t elemSize = 4;
  int32_t indexDtype = 7;
  int64_t outer = 0, axisDim = 0, n = 0, inner = 0;
  const void *data = nullptr, *indices = nullptr;
  void *out = nullptr;
};

/// The reductions of kernel.scatter_elements and kernel.scatter_nd
/// (cpu::ScatterReduction).
enum ScatterReduce : int32_t {
  kSeNone = 0,
  kSeAdd,
  kSeMul,
  kSeMax,
  kSeMin,
};
/// kernel.scatter_nd: `tuples` index tuples of k components address slices
/// of sliceLen elements of y (dims and strides of data's first k dims).
/// `ordered`: one thread per slice element applies every tuple's update in
/// order (the CPU's result with repeated indices: mul, max, min, and add on
/// dtypes without atomics); otherwise one thread per update element (none:
/// any repeated index wins; add: atomics).
struct ScatterNDParams {
  int32_t dtype = 0;
  int32_t elemSize = 4;
  int32_t indexDtype = 7;
  int32_t reduction = kSeNone; ///< ScatterReduce
  int32_t ordered = 0;
  int32_t k = 1;
  int64_t tuples = 0, sliceLen = 0;
  int64_t dims[kMaxDims] = {}, strides[kMaxDims] = {};
  const void *indices = nullptr, *updates = nullptr;
  void *out = nullptr;
};

/// kernel.unscale_check_finite, one gradient: u = g * inv (f32), found_inf
/// set when a g element is not finite (f64 g: or u overflows).
struct UnscaleParams {
  int32_t gDtype = 0;
  int64_t n = 0;
  const float *scale = nullptr; ///< the inverse is computed from it
  const void *g = nullptr;
  float *u = nullptr;
  float *foundInf = nullptr;
};

/// comm.all_reduce, one buffer packed into (or unpacked from) the call's
/// staging buffer: dst[i] = src[i] * mul / div in f32, rounded once to
/// dst's dtype (the CPU's loadFloat / storeFloat).
struct AllReduceCopyParams {
  int32_t srcDtype = 0, dstDtype = 0;
  int64_t n = 0;
  const void *src = nullptr;
  void *dst = nullptr;
  float mul = 1.0f, div = 1.0f;
};

struct OptimizerParams {
  int32_t kind = 0; ///< 0 sgd, 1 adam
  int64_t n = 0;
  double lr = 0, momentum = 0, dampening = 0, weightDecay = 0;
  int32_t nesterov = 0, decoupled = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const float *grad = nullptr;
  const float *foundInf = nullptr; ///< null: never skipped
  float *param = nullptr, *buf1 = nullptr, *buf2 = nullptr;
  int64_t *step = nullptr;
};

struct LossScaleParams {
  double growthFactor = 2.0, backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  const float *foundInf = nullptr;
  float *scale = nullptr;
  int64_t *tracker = nullptr;
};

/// kernel.layer_norm and kernel.instance_norm: `rows` rows of rowSize
/// contiguous elements, one thread block per row; the statistics accumulate
/// in f64 (mean, then the centred squares, as the CPU) and are applied in
/// f32. Layer norm: y = (x - mean) * invStd * scale[j] + bias[j], where the
/// row element j indexes scale / bias directly (dense) or through rowDims
/// and their broadcast strides. Instance norm: row i is channel i % channels
/// and y = x * a + (bias[c] - mean * a), a = invStd * scale[c].
struct NormParams {
  int32_t instance = 0;
  int32_t rms = 0; ///< RMS norm: no mean subtracted, the mean square's root
  /// Group norm: a row is one group of an image, groupSpatial elements per
  /// channel, `groups` groups per image; 0: not a group norm.
  int64_t groupSpatial = 0, groups = 1;
  int32_t xDtype = 1; ///< y's as well
  int32_t scaleDtype = 1;
  int32_t biasDtype = 0;                  ///< 0: no bias
  int32_t meanDtype = 0, invStdDtype = 0; ///< 0: not written
  float epsilon = 1e-5f;
  int64_t rows = 0, rowSize = 0;
  int64_t channels = 1;
  int32_t rowRank = 0;
  int32_t scaleDense = 1, biasDense = 1;
  int64_t rowDims[kMaxDims] = {};
  int64_t scaleStrides[kMaxDims] = {}, biasStrides[kMaxDims] = {};
  const void *x = nullptr, *scale = nullptr, *bias = nullptr;
  void *y = nullptr, *mean = nullptr, *invStd = nullptr;
};

/// kernel.layer_norm_grad (the CPU's cpu::layerNormGrad): one block per row
/// for dx (the row's two means by block sums in f64), then one thread per
/// normalized element for dscale and dbias (the rows in order, in f64).
struct LayerNormGradParams {
  int32_t xDtype = 1;     ///< dy's and dx's too
  int32_t scaleDtype = 1; ///< dscale's and dbias's too
  int32_t hasBias = 0;    ///< dbias is written
  int64_t rows = 0, rowSize = 0;
  const void *dy = nullptr, *x = nullptr, *scale = nullptr;
  const float *mean = nullptr, *invStd = nullptr;
  void *dx = nullptr, *dscale = nullptr, *dbias = nullptr;
};

/// kernel.attention (mp/Runtime/Attention.h): one warp per query row, the
/// lanes splitting the head dim for each score and the value dim for the
/// output, with f32 running max and sum over the keys (flash-style: the
/// scores are never stored). Head and value dims up to kMaxAttentionDim.
constexpr int kMaxAttentionDim = 256;
struct AttentionViewParams {
  int64_t offset = 0;
  int64_t strides[4] = {}; ///< batch, head, row, column
};
struct AttentionParams {
  int64_t batch = 0, heads = 0, queries = 0, keys = 0, headDim = 0,
          valueDim = 0;
  AttentionViewParams q, k, v, o, mask;
  int32_t qDtype = 1, kDtype = 1, vDtype = 1, oDtype = 1;
  int32_t maskDtype = 0; ///< 0: no mask
  float scale = 1;
  const void *qData = nullptr, *kData = nullptr, *vData = nullptr,
             *maskData = nullptr;
  void *oData = nullptr;
};

/// cudnn.lrn across channels of x [n, c, spatial]: one thread per element.
struct LrnParams {
  int32_t dtype = 1;
  int64_t n = 0, c = 0, spatial = 0;
  int64_t before = 0, after = 0; ///< the window is [ch - before, ch + after]
  float scale = 0, beta = 0, bias = 0; ///< scale = alpha / size
  const void *x = nullptr;
  void *y = nullptr;
};

/// C = A B (or C += A B) with A [m, k] and B [k, n] read from any float
/// dtype at element offsets (transposed: A(i, l) = a[l * lda + i],
/// B(l, j) = b[j * ldb + l]), C an f32 (or f64, computing in f64) matrix
/// with row stride ldc: the GEMMs of the recurrent calls (a shared-memory
/// tiled kernel; one output element per thread).
struct GemmParams {
  int32_t transA = 0, transB = 0;
  int32_t aDtype = 1, bDtype = 1;
  int32_t f64 = 0; ///< C is f64 and the products are summed in f64
  int32_t accumulate = 0;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t aOffset = 0, bOffset = 0, cOffset = 0;
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
};

/// The activation functions of ONNX's recurrent operators
/// (cpu::RnnActivationKind, same order).
enum RnnActKind : int32_t {
  kRnnRelu = 0,
  kRnnTanh,
  kRnnSigmoid,
  kRnnAffine,
  kRnnLeakyRelu,
  kRnnThresholdedRelu,
  kRnnScaledTanh,
  kRnnHardSigmoid,
  kRnnElu,
  kRnnSoftsign,
  kRnnSoftplus,
};
struct RnnAct {
  int32_t kind = kRnnTanh;
  float alpha = 0, beta = 0;
};
enum RnnModeCode : int32_t { kRnnLstm = 0, kRnnGru = 1, kRnnPlain = 2 };

/// cudnn.rnn (ONNX LSTM / GRU / RNN, layout 0), one direction at a time as
/// the CPU: the input projections of every step in one GEMM into xw (with
/// the folded bias), then per step a GEMM of the state into hr and the gate
/// kernel (GRU without linear_before_reset: a gate kernel for z and r, a
/// GEMM of r * h, and one for the candidate). The state h, c is f32 scratch
/// updated in place (a thread reads only its own elements of it).
struct RnnParams {
  int32_t mode = kRnnLstm;
  int32_t dtype = 1;    ///< x's and every float buffer's
  int32_t seqDtype = 0; ///< 0: no sequence_lens
  int32_t hasClip = 0;
  float clip = 0;
  int32_t inputForget = 0, linearBeforeReset = 0;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  RnnAct acts[6]; ///< per direction: LSTM f, g, h; GRU f, g; RNN f
  const void *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr;
  const void *seqLens = nullptr, *initH = nullptr, *initC = nullptr;
  const void *p = nullptr;
  void *y = nullptr;
  /// Scratch (f32): xw [seq * batch, G * H], hr [batch, G * H], h, c, tmp
  /// [batch, H].
  float *xw = nullptr, *hr = nullptr, *h = nullptr, *c = nullptr,
        *tmp = nullptr;
  /// The direction and time step of a launch.
  int32_t dir = 0;
  int64_t t = 0;
};

/// kernel.lstm_bwd (backpropagation through time for ONNX LSTM with the
/// default activations), one direction at a time as the CPU, computing in T
/// (f32; f64 for f64 data): the forward again (the activated gates, the
/// state before each step and the cell state after it kept in scratch), then
/// the steps in reverse with the gate gradients in place of the gates, then
/// the weight GEMMs. Every gradient accumulates in T scratch and is rounded
/// once into its result at the end.
struct LstmBwdParams {
  int32_t dtype = 1; ///< x's and every buffer's
  int32_t f64 = 0;   ///< T is double
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  const void *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr;
  const void *initH = nullptr, *initC = nullptr;
  const void *dy = nullptr, *dyH = nullptr, *dyC = nullptr;
  /// Scratch of T: gates [seq * batch, 4H]; hPrev, cPrev, cAfter
  /// [seq * batch, H]; h, c [batch, H]; dh0, dc0 [dirs, batch, H] (the
  /// running dh, dc of a direction); dx [seq * batch, input]; dw [dirs, 4H,
  /// input], dr [dirs, 4H, H], db [dirs, 8H].
  void *gates = nullptr, *hPrev = nullptr, *cPrev = nullptr, *cAfter = nullptr,
       *h = nullptr, *c = nullptr, *dh0 = nullptr, *dc0 = nullptr,
       *dx = nullptr, *dw = nullptr, *dr = nullptr, *db = nullptr;
  /// The direction and time step of a launch.
  int32_t dir = 0;
  int64_t t = 0;
};
/// The launches of kernel.lstm_bwd (launchLstmBwd's stage).
enum LstmBwdStage : int32_t {
  kLstmForwardInit = 0,  ///< gates = the bias, h, c = the initial state
  kLstmForwardStep = 1,  ///< the gates of step t (after gates[t] += h R^T)
  kLstmBackwardInit = 2, ///< dh, dc = dy_h, dy_c
  kLstmBackwardStep = 3, ///< the gate gradients of step t
  kLstmBiasGrad = 4,     ///< db = the column sums of the gate gradients
};

/// How topk compares x's elements: floats widened to f64 (NaN above every
/// number), signed or unsigned integers as 64-bit integers.
enum SortKey : int32_t { kKeyFloat = 0, kKeySigned = 1, kKeyUnsigned = 2 };

/// kernel.topk over x [outer, len, inner] along len: one thread per element
/// counts the elements that come first in the CPU's order (larger, or
/// smaller, first; equal values by index) and, when that rank is below k,
/// writes itself there.
struct TopkParams {
  int32_t dtype = 1, elemSize = 4, key = kKeyFloat;
  int32_t largest = 1;
  int32_t indexDtype = 7;
  int64_t outer = 0, len = 0, inner = 0, k = 0;
  const void *x = nullptr;
  void *values = nullptr, *indices = nullptr;
};

/// kernel.cumsum and kernel.hardmax over [outer, len, inner] along len: one
/// thread per line (y may be x: a thread reads its line before writing it).
struct ScanParams {
  int32_t dtype = 1;
  int32_t exclusive = 0, reverse = 0;
  int64_t outer = 0, len = 0, inner = 0;
  const void *x = nullptr;
  void *y = nullptr;
};

/// kernel.trilu on [mats, rows, cols]: element (i, j) kept where j - i >= k
/// (upper) or <= k (lower), else zero bytes; k clamped to +-(rows + cols +
/// 1) as the CPU.
struct TriluParams {
  int32_t elemSize = 4;
  int32_t upper = 1;
  int64_t k = 0, rows = 0, cols = 0, n = 0;
  const void *x = nullptr;
  void *y = nullptr;
};

/// kernel.tile: y[i] = x at i's coordinates modulo x's dims.
struct TileParams {
  int32_t rank = 0, elemSize = 4;
  int64_t n = 0;
  int64_t yDims[kMaxDims] = {}, xDims[kMaxDims] = {}, xStrides[kMaxDims] = {};
  const void *x = nullptr;
  void *y = nullptr;
};

/// kernel.pad: per dim of y, j = coordinate - before is inside x's kept part
/// [lo, lo + len) when 0 <= j < len; otherwise constant mode writes the
/// constant and the others map j into [0, len) (reflect, edge, wrap, as
/// numpy.pad).
enum PadModeCode : int32_t {
  kPadConstant = 0,
  kPadReflect = 1,
  kPadEdge = 2,
  kPadWrap = 3,
};
struct PadParams {
  int32_t rank = 0, elemSize = 4, mode = kPadConstant;
  int64_t n = 0;
  int64_t yDims[kMaxDims] = {}, xStrides[kMaxDims] = {};
  int64_t lo[kMaxDims] = {}, len[kMaxDims] = {}, before[kMaxDims] = {};
  uint64_t constant = 0; ///< one element's bytes
  const void *x = nullptr;
  void *y = nullptr;
};

/// kernel.gather_elements (one thread per element of indices) and
/// kernel.scatter_elements (one thread per line of indices along axis,
/// applying its updates in order: the CPU's order wherever two updates
/// meet, since only updates of one line can address the same element).
/// dims are indices' (and updates') shape, dataStrides data's.
struct ElementsParams {
  int32_t rank = 1, elemSize = 4, dtype = 1, indexDtype = 7;
  int32_t axis = 0, reduction = kSeNone;
  int64_t n = 0;       ///< gather: y's elements; scatter: lines
  int64_t axisDim = 0; ///< data's dim along axis
  int64_t dims[kMaxDims] = {}, dataStrides[kMaxDims] = {};
  const void *data = nullptr, *indices = nullptr, *updates = nullptr;
  void *out = nullptr;
};

/// kernel.gather_nd: y's element i is element i % sliceLen of the slice of
/// tuple t = i / sliceLen: batch t / perBatch (batchStride elements of data
/// each), then k index components over dims / strides.
struct GatherNDParams {
  int32_t elemSize = 4, indexDtype = 7, k = 1;
  int64_t n = 0, sliceLen = 1, perBatch = 1, batchStride = 0;
  int64_t dims[kMaxDims] = {}, strides[kMaxDims] = {};
  const void *data = nullptr, *indices = nullptr;
  void *out = nullptr;
};

/// kernel.resize: one thread per output element; per dim the taps of its
/// coordinate (the CPU's computeTaps arithmetic, in f64), then the sum over
/// the combinations of the dims' taps (nearest: a copy of one element).
/// Codes: cpu::ResizeMode, cpu::CoordinateTransform, cpu::NearestMode.
struct ResizeParams {
  int32_t rank = 0, dtype = 1, elemSize = 4;
  int32_t mode = 0, transform = 0, nearest = 0, excludeOutside = 0;
  double cubicA = -0.75;
  double extrapolation = 0;       ///< float data
  uint64_t extrapolationBits = 0; ///< integer data (nearest)
  int64_t n = 0;
  int64_t xDims[kMaxDims] = {}, yDims[kMaxDims] = {}, xStrides[kMaxDims] = {};
  double scales[kMaxDims] = {}, roiStart[kMaxDims] = {}, roiEnd[kMaxDims] = {};
  const void *x = nullptr;
  void *y = nullptr;
};

/// A kernel that finds bad data (an index out of range) records it here:
/// the first code and the offending value, per call.
struct DeviceError {
  int32_t code = 0;
  int32_t pad = 0;
  int64_t value = 0;
};
enum DeviceErrorCode : int32_t {
  kErrNone = 0,
  kErrIndexOutOfRange = 1,  ///< gather / scatter index
  kErrTargetOutOfRange = 2, ///< loss target / label outside [0, C)
  kErrSequenceLength = 3,   ///< rnn sequence_lens entry outside [0, seq]
};

} // namespace mp::rt::cuda

#endif // MP_RUNTIME_CUDA_KERNELPARAMS_H
