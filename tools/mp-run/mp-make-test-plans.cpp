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
//
// Only the test build builds it (tools/mp-run/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace mp::rt;

namespace {

struct Builder {
  Plan plan;
  uint32_t arena(Shape shape, std::string name) {
    PlanBuffer b;
    b.id = static_cast<uint32_t>(plan.buffers.size());
    b.shape = std::move(shape);
    b.offset = plan.arenaSize;
    b.name = std::move(name);
    plan.arenaSize += (b.byteCount() + 255) / 256 * 256;
    plan.buffers.push_back(b);
    return b.id;
  }
  uint32_t weight(const std::string &name, Shape shape,
                  const std::vector<float> &values) {
    plan.weights.push_back(PlanWeight::copyOf(
        name, DType::F32, shape, values.data(), values.size() * sizeof(float)));
    PlanBuffer b;
    b.id = static_cast<uint32_t>(plan.buffers.size());
    b.shape = std::move(shape);
    b.storage = BufferStorage::Weight;
    b.weight = static_cast<uint32_t>(plan.weights.size() - 1);
    b.name = name;
    plan.buffers.push_back(b);
    return b.id;
  }
  void input(const std::string &name, uint32_t id) {
    plan.inputs.push_back({name, id, DType::F32, plan.buffers[id].shape});
  }
  void output(const std::string &name, uint32_t id) {
    plan.outputs.push_back({name, id, DType::F32, plan.buffers[id].shape});
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
  return save(plan, dir + "/mlp.mpplan") &&
         save(badAttr, dir + "/bad-attr.mpplan") &&
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

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mp-make-test-plans DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  bool ok = writeMlp(dir) && writeTwoInputs(dir) && writeUnsupported(dir);
  return ok ? 0 : 1;
}
