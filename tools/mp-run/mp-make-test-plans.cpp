//===- mp-make-test-plans.cpp - plan fixtures for mp-run's lit tests ------===//
//
//   mp-make-test-plans DIR
//
// Writes into DIR the small plans that test/Tools/mp-run runs, with input
// files and expected outputs computed here by naive loops in double (not by
// the CPU kernels), so that mp-run --compare checks the executor:
//
//   mlp.mpplan          x f32 [2, 3] -> y f32 [2, 4]:
//                       y = softmax(relu(x @ w + b)) (matmul, softmax)
//   mlp.x.npy           an input; mlp.y.npy its expected output;
//   mlp.y-wrong.npy     mlp.y.npy with element [1, 2] changed;
//   mlp.x-short.npy     f32 [2, 2] (a wrong shape); mlp.x-f64.npy (wrong dtype)
//   two-inputs.mpplan   a f32 [2, 3], b f32 [3, 2] -> d = a @ b, c = a
//                       weight constant output; two-inputs.{a,b,d}.npy
//   unsupported.mpplan  a call of kind kernel.no_such_kernel
//   bad-attr.mpplan     mlp with softmax's axis given as a string
//   mlp.weights/        mlp's weights, w.npy and b.npy (f32), for plans saved
//                       without them (mp-strip-weights, mp-run --weights);
//                       mlp.weights-f64/ the same as f64; mlp.w-other.npy
//                       w with element [1, 1] changed
//
// Training plans (format 1.1: State buffers, training information) for
// mp-run --train, made of existing calls; the lit tests make their data:
//
//   linreg.train.mpplan   regression, batches of 8: x f32 [8, 3], y f32
//                         [8, 1]; pred = x @ w, loss = mean((pred - y)^2),
//                         w -= lr * (2/8) x^T (pred - y) with w a state
//                         [3, 1] (initially 0, weight 'w'), lr = 0.1,
//                         unless the loss is not finite (then the step is
//                         skipped: w = where(skipped, w, w - step));
//                         outputs loss, pred, skipped (bool), scale (a
//                         state that stays 1)
//   linreg.infer.mpplan   x f32 [5, 3] -> pred = x @ w (weight 'w' = 0)
//   linreg.infer-transposed.mpplan
//                         the same with w [1, 3] (trans_b): a weight named
//                         like the state but of another shape
//   linreg.infer-renamed.mpplan
//                         the same with the weight named 'weights'
//   softmax.train.mpplan  classification, batches of 8: x f32 [8, 4], y f32
//                         [8, 3] one-hot; p = softmax(x @ W + bias), loss =
//                         -sum(y * log_softmax) / 8, SGD (lr 0.5) on the
//                         states W [4, 3] and bias [3] (initially 0)
//   softmax.infer.mpplan  x f32 [4, 4] -> p = softmax(x @ W + bias)
//
// Only the test build builds it (tools/mp-run/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/PlanBuilding.h"
#include "mp/Runtime/TensorIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace mp::rt;

namespace {

struct Builder {
  Plan plan;
  uint32_t arena(Shape shape, std::string name, DType dtype = DType::F32) {
    return appendArenaBuffer(plan, dtype, std::move(shape), std::move(name));
  }
  uint32_t weight(const std::string &name, Shape shape,
                  const std::vector<float> &values) {
    return appendWeightBuffer(plan, BufferStorage::Weight, name, name,
                              std::move(shape), values);
  }
  /// A state buffer named `name`, initially the weight `name` (or
  /// `weightName`) with `values`.
  uint32_t state(const std::string &name, Shape shape,
                 const std::vector<float> &values,
                 const std::string &weightName = "") {
    uint32_t id = weight(weightName.empty() ? name : weightName,
                         std::move(shape), values);
    plan.buffers[id].storage = BufferStorage::State;
    plan.buffers[id].name = name;
    return id;
  }
  void input(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.inputs.push_back({name, id, b.dtype, b.shape});
  }
  void output(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.outputs.push_back({name, id, b.dtype, b.shape});
  }
  void call(const char *kind, std::vector<uint32_t> operands,
            std::vector<uint32_t> results, std::vector<PlanAttr> attrs,
            const char *location) {
    PlanCall c;
    c.kind = kind;
    c.operands = std::move(operands);
    c.results = std::move(results);
    c.attributes = std::move(attrs);
    c.location = location;
    plan.calls.push_back(std::move(c));
  }
  void elementwise(const char *fn, std::vector<uint32_t> operands,
                   uint32_t result, const char *location) {
    call("kernel.elementwise", std::move(operands), {result},
         {{"fn", std::string(fn)}}, location);
  }
  /// d = alpha * op(a) @ b (+ bias).
  void matmul(uint32_t a, uint32_t b, const uint32_t *bias, uint32_t d,
              int64_t transA, double alpha, const char *location) {
    std::vector<uint32_t> operands = {a, b};
    if (bias)
      operands.push_back(*bias);
    call("cublaslt.matmul", operands, {d},
         {{"has_c", int64_t(0)},
          {"has_bias", int64_t(bias ? 1 : 0)},
          {"compute_type", int64_t(1)},
          {"trans_a", transA},
          {"alpha", alpha}},
         location);
  }
  void reduce(const char *fn, uint32_t x, uint32_t y,
              std::vector<int64_t> axes, const char *location) {
    call("kernel.reduce", {x}, {y},
         {{"fn", std::string(fn)}, {"axes", std::move(axes)}}, location);
  }
};

std::vector<float> ramp(size_t n, float scale, float shift) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = scale * static_cast<float>((i * 7) % 11) + shift;
  return out;
}

bool save(const Plan &plan, const std::string &path) {
  if (Status s = savePlan(plan, path); !s) {
    std::fprintf(stderr, "mp-make-test-plans: %s\n", s.message().c_str());
    return false;
  }
  return true;
}

bool saveTensor(const std::string &path, DType dtype, Shape shape,
                const std::vector<double> &values) {
  HostTensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F64)
      t.as<double>()[i] = values[i];
    else
      t.as<float>()[i] = static_cast<float>(values[i]);
  }
  if (Status s = writeNpy(path, t.view()); !s) {
    std::fprintf(stderr, "mp-make-test-plans: %s\n", s.message().c_str());
    return false;
  }
  return true;
}

std::vector<double> widen(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

PlanCall matmulCall(uint32_t a, uint32_t b, const uint32_t *bias, uint32_t d,
                    const char *epilogue, const char *location) {
  PlanCall c;
  c.kind = "cublaslt.matmul";
  c.operands = {a, b};
  if (bias)
    c.operands.push_back(*bias);
  c.results = {d};
  c.attributes = {{"has_c", int64_t(0)},
                  {"has_bias", int64_t(bias ? 1 : 0)},
                  {"compute_type", int64_t(1)},
                  {"epilogue", std::string(epilogue)}};
  c.location = location;
  return c;
}

Plan mlpPlan(const std::vector<float> &w, const std::vector<float> &bias) {
  Builder b;
  b.plan.producer = "mp-make-test-plans";
  b.plan.modelName = "mlp";
  uint32_t x = b.arena({2, 3}, "x");
  uint32_t wid = b.weight("w", {3, 4}, w);
  uint32_t bid = b.weight("b", {4}, bias);
  uint32_t h = b.arena({2, 4}, "h");
  uint32_t y = b.arena({2, 4}, "y");
  b.input("x", x);
  b.output("y", y);
  b.plan.calls.push_back(matmulCall(x, wid, &bid, h, "relu", "fc1"));
  PlanCall softmax;
  softmax.kind = "cudnn.softmax";
  softmax.operands = {h};
  softmax.results = {y};
  softmax.attributes = {{"axis", int64_t(1)}, {"log", int64_t(0)}};
  softmax.location = "softmax";
  b.plan.calls.push_back(softmax);
  return b.plan;
}

bool writeMlp(const std::string &dir) {
  std::vector<float> w = ramp(12, 0.125f, -0.5f), bias = ramp(4, 0.25f, -1.0f);
  std::vector<float> x = ramp(6, 0.5f, -2.0f);
  std::vector<double> y(8);
  for (int i = 0; i < 2; ++i) {
    double row[4], mx = -INFINITY, sum = 0;
    for (int j = 0; j < 4; ++j) {
      double acc = bias[j];
      for (int k = 0; k < 3; ++k)
        acc += double(x[i * 3 + k]) * w[k * 4 + j];
      row[j] = std::max(acc, 0.0);
      mx = std::max(mx, row[j]);
    }
    for (int j = 0; j < 4; ++j)
      sum += std::exp(row[j] - mx);
    for (int j = 0; j < 4; ++j)
      y[i * 4 + j] = std::exp(row[j] - mx) / sum;
  }
  std::vector<double> wrong = y;
  wrong[1 * 4 + 2] += 0.25;
  Plan plan = mlpPlan(w, bias);
  Plan badAttr = plan;
  badAttr.calls[1].attributes[0].value = std::string("last");
  std::vector<double> otherW = widen(w);
  otherW[1 * 4 + 1] += 1.0;
  std::error_code ec;
  std::filesystem::create_directories(dir + "/mlp.weights", ec);
  std::filesystem::create_directories(dir + "/mlp.weights-f64", ec);
  return save(plan, dir + "/mlp.mpplan") &&
         save(badAttr, dir + "/bad-attr.mpplan") &&
         saveTensor(dir + "/mlp.weights/w.npy", DType::F32, {3, 4}, widen(w)) &&
         saveTensor(dir + "/mlp.weights/b.npy", DType::F32, {4}, widen(bias)) &&
         saveTensor(dir + "/mlp.weights-f64/w.npy", DType::F64, {3, 4},
                    widen(w)) &&
         saveTensor(dir + "/mlp.weights-f64/b.npy", DType::F64, {4},
                    widen(bias)) &&
         saveTensor(dir + "/mlp.w-other.npy", DType::F32, {3, 4}, otherW) &&
         saveTensor(dir + "/mlp.x.npy", DType::F32, {2, 3}, widen(x)) &&
         saveTensor(dir + "/mlp.y.npy", DType::F32, {2, 4}, y) &&
         saveTensor(dir + "/mlp.y-wrong.npy", DType::F32, {2, 4}, wrong) &&
         saveTensor(dir + "/mlp.x-short.npy", DType::F32, {2, 2},
                    std::vector<double>(4, 1.0)) &&
         saveTensor(dir + "/mlp.x-f64.npy", DType::F64, {2, 3}, widen(x));
}

bool writeTwoInputs(const std::string &dir) {
  std::vector<float> a = ramp(6, 0.5f, -1.0f), bm = ramp(6, 0.25f, 0.5f);
  std::vector<float> constant = {3.0f, -4.0f};
  std::vector<double> d(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k)
        acc += double(a[i * 3 + k]) * bm[k * 2 + j];
      d[i * 2 + j] = acc;
    }
  Builder b;
  b.plan.modelName = "two-inputs";
  uint32_t aid = b.arena({2, 3}, "a");
  uint32_t bid = b.arena({3, 2}, "b");
  uint32_t did = b.arena({2, 2}, "d");
  uint32_t cid = b.weight("c", {2}, constant);
  b.input("a", aid);
  b.input("b", bid);
  b.output("d", did);
  b.output("c", cid);
  b.plan.calls.push_back(matmulCall(aid, bid, nullptr, did, "none", "mm"));
  return save(b.plan, dir + "/two-inputs.mpplan") &&
         saveTensor(dir + "/two-inputs.a.npy", DType::F32, {2, 3}, widen(a)) &&
         saveTensor(dir + "/two-inputs.b.npy", DType::F32, {3, 2}, widen(bm)) &&
         saveTensor(dir + "/two-inputs.d.npy", DType::F32, {2, 2}, d) &&
         saveTensor(dir + "/two-inputs.c.npy", DType::F32, {2},
                    widen(constant));
}

bool writeUnsupported(const std::string &dir) {
  Builder b;
  uint32_t x = b.arena({4}, "x");
  uint32_t y = b.arena({4}, "y");
  b.input("x", x);
  b.output("y", y);
  PlanCall c;
  c.kind = "kernel.no_such_kernel";
  c.operands = {x};
  c.results = {y};
  c.location = "Mystery_0";
  b.plan.calls.push_back(c);
  return save(b.plan, dir + "/unsupported.mpplan");
}

/// Linear regression trained by SGD (see the header comment).
bool writeLinreg(const std::string &dir) {
  constexpr int64_t B = 8, D = 3;
  Builder b;
  b.plan.producer = "mp-make-test-plans";
  b.plan.modelName = "linreg";
  uint32_t x = b.arena({B, D}, "x");
  uint32_t y = b.arena({B, 1}, "y");
  uint32_t w = b.state("w", {D, 1}, std::vector<float>(D, 0.0f));
  uint32_t scale = b.state("loss_scale", {}, {1.0f}, "loss_scale.init");
  uint32_t lr = b.weight("lr", {}, {0.1f});
  uint32_t pred = b.arena({B, 1}, "pred");
  uint32_t diff = b.arena({B, 1}, "diff");
  uint32_t sq = b.arena({B, 1}, "sq");
  uint32_t loss = b.arena({}, "loss");
  uint32_t isInf = b.arena({}, "is_inf", DType::Bool);
  uint32_t isNan = b.arena({}, "is_nan", DType::Bool);
  uint32_t skipped = b.arena({}, "skipped", DType::Bool);
  uint32_t grad = b.arena({D, 1}, "grad");
  uint32_t step = b.arena({D, 1}, "step");
  uint32_t updated = b.arena({D, 1}, "updated");
  b.input("x", x);
  b.input("y", y);
  b.output("loss", loss);
  b.output("pred", pred);
  b.output("skipped", skipped);
  b.output("scale", scale);
  b.matmul(x, w, nullptr, pred, 0, 1.0, "forward");
  b.elementwise("sub", {pred, y}, diff, "diff");
  b.elementwise("mul", {diff, diff}, sq, "square");
  b.reduce("mean", sq, loss, {0, 1}, "loss");
  b.elementwise("is_inf", {loss}, isInf, "is_inf");
  b.elementwise("is_nan", {loss}, isNan, "is_nan");
  b.elementwise("or", {isInf, isNan}, skipped, "skipped");
  b.matmul(x, diff, nullptr, grad, 1, 2.0 / B, "grad_w");
  b.elementwise("mul", {grad, lr}, step, "lr");
  b.elementwise("sub", {w, step}, updated, "sgd_w");
  b.elementwise("where", {skipped, w, updated}, w, "skip_w");
  PlanTrainingInfo t;
  t.dataInput = "x";
  t.labelInput = "y";
  t.lossOutput = "loss";
  t.predictionOutput = "pred";
  t.skippedOutput = "skipped";
  t.scaleOutput = "scale";
  t.task = PlanTrainingInfo::kTaskRegression;
  b.plan.training = t;

  auto inference = [&](const char *weightName, bool transposed) {
    Builder inf;
    inf.plan.producer = "mp-make-test-plans";
    inf.plan.modelName = "linreg-infer";
    uint32_t ix = inf.arena({5, D}, "x");
    uint32_t iw = inf.weight(weightName, transposed ? Shape{1, D} : Shape{D, 1},
                             std::vector<float>(D, 0.0f));
    uint32_t ip = inf.arena({5, 1}, "pred");
    inf.input("x", ix);
    inf.output("pred", ip);
    inf.matmul(ix, iw, nullptr, ip, 0, 1.0, "forward");
    if (transposed)
      inf.plan.calls.back().attributes.push_back({"trans_b", int64_t(1)});
    return inf.plan;
  };
  return save(b.plan, dir + "/linreg.train.mpplan") &&
         save(inference("w", false), dir + "/linreg.infer.mpplan") &&
         save(inference("w", true), dir + "/linreg.infer-transposed.mpplan") &&
         save(inference("weights", false),
              dir + "/linreg.infer-renamed.mpplan");
}

/// Softmax regression trained by SGD (see the header comment).
bool writeSoftmax(const std::string &dir) {
  constexpr int64_t B = 8, D = 4, C = 3;
  constexpr float kLr = 0.5f;
  Builder b;
  b.plan.producer = "mp-make-test-plans";
  b.plan.modelName = "softmax";
  uint32_t x = b.arena({B, D}, "x");
  uint32_t y = b.arena({B, C}, "y");
  uint32_t w = b.state("W", {D, C}, std::vector<float>(D * C, 0.0f));
  uint32_t bias = b.state("bias", {C}, std::vector<float>(C, 0.0f));
  uint32_t negInvB = b.weight("neg_inv_batch", {}, {-1.0f / B});
  uint32_t lrOverB = b.weight("lr_over_batch", {}, {kLr / B});
  uint32_t logits = b.arena({B, C}, "logits");
  uint32_t p = b.arena({B, C}, "p");
  uint32_t logp = b.arena({B, C}, "logp");
  uint32_t ylogp = b.arena({B, C}, "ylogp");
  uint32_t total = b.arena({}, "total");
  uint32_t loss = b.arena({}, "loss");
  uint32_t d = b.arena({B, C}, "dlogits");
  uint32_t gw = b.arena({D, C}, "grad_W");
  uint32_t gb = b.arena({C}, "grad_bias");
  uint32_t sb = b.arena({C}, "step_bias");
  b.input("x", x);
  b.input("y", y);
  b.output("loss", loss);
  b.output("p", p);
  b.matmul(x, w, &bias, logits, 0, 1.0, "logits");
  b.call("cudnn.softmax", {logits}, {p}, {{"axis", int64_t(1)}, {"log", int64_t(0)}},
         "softmax");
  b.call("cudnn.softmax", {logits}, {logp},
         {{"axis", int64_t(1)}, {"log", int64_t(1)}}, "log_softmax");
  b.elementwise("mul", {y, logp}, ylogp, "ce");
  b.reduce("sum", ylogp, total, {0, 1}, "ce_sum");
  b.elementwise("mul", {total, negInvB}, loss, "loss");
  b.elementwise("sub", {p, y}, d, "dlogits");
  b.matmul(x, d, nullptr, gw, 1, kLr / B, "grad_W");
  b.elementwise("sub", {w, gw}, w, "sgd_W");
  b.reduce("sum", d, gb, {0}, "grad_bias");
  b.elementwise("mul", {gb, lrOverB}, sb, "lr_bias");
  b.elementwise("sub", {bias, sb}, bias, "sgd_bias");
  PlanTrainingInfo t;
  t.dataInput = "x";
  t.labelInput = "y";
  t.lossOutput = "loss";
  t.predictionOutput = "p";
  t.task = PlanTrainingInfo::kTaskClassification;
  b.plan.training = t;

  Builder inf;
  inf.plan.producer = "mp-make-test-plans";
  inf.plan.modelName = "softmax-infer";
  uint32_t ix = inf.arena({4, D}, "x");
  uint32_t iw = inf.weight("W", {D, C}, std::vector<float>(D * C, 0.0f));
  uint32_t ib = inf.weight("bias", {C}, std::vector<float>(C, 0.0f));
  uint32_t il = inf.arena({4, C}, "logits");
  uint32_t ip = inf.arena({4, C}, "p");
  inf.input("x", ix);
  inf.output("p", ip);
  inf.matmul(ix, iw, &ib, il, 0, 1.0, "logits");
  inf.call("cudnn.softmax", {il}, {ip},
           {{"axis", int64_t(1)}, {"log", int64_t(0)}}, "softmax");
  return save(b.plan, dir + "/softmax.train.mpplan") &&
         save(inf.plan, dir + "/softmax.infer.mpplan");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mp-make-test-plans DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  bool ok = writeMlp(dir) && writeTwoInputs(dir) && writeUnsupported(dir) &&
            writeLinreg(dir) && writeSoftmax(dir);
  return ok ? 0 : 1;
}
