//===- CudaDeviceTestSupport.h - one-call plans on CPU and GPU --*- C++ -*-===//
//
// The helpers of the CUDA device tests (CudaDevice*Test.cpp): one-call
// plans, their run on the CPU executor (the reference) and, where the CUDA
// backend is built and a GPU is present, on the CudaExecutor, and the
// comparison of the outputs with a tolerance per dtype.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_CUDADEVICETESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_CUDADEVICETESTSUPPORT_H

#include "RuntimeTestSupport.h"

#include "mp/Runtime/CUDA/CudaPlanning.h"
#include "mp/Runtime/Executor.h"
#if MP_HAVE_CUDA_BACKEND
#include "mp/Runtime/CUDA/CudaExecutor.h"
#endif

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

namespace mp::rt::test::cudadevice {

// What the device tests use of RuntimeTestSupport.h, with `using namespace`
// of this namespace.
using mp::rt::test::getD;
using mp::rt::test::randomTensor;
using mp::rt::test::Rng;
using mp::rt::test::setD;

/// An argument of a one-call plan (copies share the tensor: initializer
/// lists copy their elements).
struct Arg {
  std::string name;
  std::shared_ptr<HostTensor> value;
  Arg(std::string n, HostTensor v)
      : name(std::move(n)), value(std::make_shared<HostTensor>(std::move(v))) {}
};

inline HostTensor clone(const HostTensor &t) {
  HostTensor c(t.dtype(), t.shape());
  if (t.byteCount())
    std::memcpy(c.data(), t.data(), t.byteCount());
  return c;
}
struct Res {
  std::string name;
  DType dtype;
  Shape shape;
  int aliasOf = -1; ///< the result is this argument's buffer (in place)
  /// With aliasOf: the buffer stays an operand too (unscale's u_i = g_i,
  /// batch norm's running statistics); otherwise it is a result only.
  bool keepOperand = false;
};

/// A plan of one call: its arguments are graph inputs, its results graph
/// outputs (arena buffers; results may alias arguments).
struct OneCall {
  Plan plan;
  std::vector<std::shared_ptr<HostTensor>> values;
  std::vector<NamedView> views() const {
    std::vector<NamedView> v;
    for (size_t i = 0; i < values.size(); ++i)
      v.push_back({plan.inputs[i].name, values[i]->view()});
    return v;
  }
};

inline OneCall oneCall(const std::string &kind, std::vector<PlanAttr> attrs,
                       std::vector<Arg> args, std::vector<Res> results) {
  OneCall c;
  uint64_t offset = 0;
  auto place = [&](DType t, const Shape &s, const std::string &name) {
    uint32_t id = static_cast<uint32_t>(c.plan.buffers.size());
    PlanBuffer b{id, t, s, BufferStorage::Arena, offset, 0, name};
    offset += (b.byteCount() + 255) / 256 * 256 + 256;
    c.plan.buffers.push_back(b);
    return id;
  };
  PlanCall call;
  call.kind = kind;
  call.attributes = std::move(attrs);
  call.location = "test";
  for (Arg &a : args) {
    uint32_t id = place(a.value->dtype(), a.value->shape(), a.name);
    c.plan.inputs.push_back({a.name, id, a.value->dtype(), a.value->shape()});
    call.operands.push_back(id);
    c.values.push_back(a.value);
  }
  for (const Res &r : results) {
    uint32_t id = r.aliasOf >= 0 ? call.operands[r.aliasOf]
                                 : place(r.dtype, r.shape, r.name);
    c.plan.outputs.push_back({r.name, id, r.dtype, r.shape});
    call.results.push_back(id);
  }
  // In-place results are not operands of their call (docs/plan-format.md).
  for (const Res &r : results)
    if (r.aliasOf >= 0 && !r.keepOperand)
      call.operands[r.aliasOf] = UINT32_MAX;
  call.operands.erase(
      std::remove(call.operands.begin(), call.operands.end(), UINT32_MAX),
      call.operands.end());
  c.plan.arenaSize = offset + 256;
  c.plan.calls.push_back(call);
  return c;
}

struct Tol {
  double rtol, atol;
};

// Used only where the CUDA backend is built.
[[maybe_unused]] inline Tol tolFor(DType t) {
  switch (t) {
  case DType::F16:
    return {4e-3, 2e-3};
  case DType::BF16:
    return {3e-2, 2e-2};
  case DType::F32:
    return {2e-4, 2e-5};
  case DType::F64:
    return {1e-9, 1e-12};
  default:
    return {0, 0};
  }
}

/// Whether a GPU is there (warns once per process when not).
inline bool gpuOrWarn() {
  static bool warned = false;
#if MP_HAVE_CUDA_BACKEND
  std::string why;
  if (cudaDeviceCount(&why) > 0)
    return true;
  if (!warned)
    WARN("no CUDA device (" << why
                            << "): the GPU parts of the CUDA tests did not run "
                               "(the CPU reference and the CUDA planning did)");
#else
  if (!warned)
    WARN("built without the CUDA backend: the GPU parts of the CUDA tests did "
         "not run (the CPU reference and the CUDA planning did)");
#endif
  warned = true;
  return false;
}

[[maybe_unused]] inline void compareTensors(const std::string &name,
                                            const HostTensor &gpu,
                                            const HostTensor &cpu, Tol tol) {
  INFO("output " << name);
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  bool exact = !isFloat(cpu.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < cpu.numElements(); ++i) {
    double g = getD(gpu, i), c = getD(cpu, i);
    bool ok;
    if (exact)
      ok =
          std::memcmp(
              static_cast<const char *>(gpu.data()) + i * byteSize(cpu.dtype()),
              static_cast<const char *>(cpu.data()) + i * byteSize(cpu.dtype()),
              byteSize(cpu.dtype())) == 0;
    else if (std::isnan(c) || std::isnan(g))
      ok = std::isnan(c) && std::isnan(g);
    else if (c == g)
      ok = true;
    else
      ok = std::abs(g - c) <= tol.atol + tol.rtol * std::abs(c);
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad) {
    INFO(bad << " of " << cpu.numElements() << " elements differ; first at "
             << first << ": GPU " << getD(gpu, first) << ", CPU "
             << getD(cpu, first));
    CHECK(bad == 0);
  }
}

/// Runs `c` on the CPU and, with a GPU, on the CUDA executor (twice: the
/// second run replays the CUDA graph), and compares every output.
/// `tol` overrides the per-dtype tolerance.
/// `batchNorm` picks who runs batch norms on the GPU.
inline void
compareCall(const OneCall &c, std::optional<Tol> tol = std::nullopt,
            cuda::BatchNormImpl batchNorm = cuda::BatchNormImpl::Auto) {
  Result<CpuExecutor> cpu = CpuExecutor::create(c.plan, "cpu");
  REQUIRE(cpu);
  Result<std::vector<NamedTensor>> expected = cpu->run(c.views());
  INFO((expected ? std::string() : expected.message()));
  REQUIRE(expected);
  Status planned = cuda::checkPlanForCuda(c.plan, "plan");
  INFO(planned.message());
  REQUIRE(planned);
#if MP_HAVE_CUDA_BACKEND
  if (!gpuOrWarn())
    return;
  CudaExecutorOptions options;
  options.batchNorm = batchNorm;
  Result<CudaExecutor> gpu = CudaExecutor::create(c.plan, "gpu", options);
  INFO((gpu ? std::string() : gpu.message()));
  REQUIRE(gpu);
  for (int run = 0; run < 2; ++run) {
    Result<std::vector<NamedTensor>> got = gpu->run(c.views());
    INFO("run " << run << ": " << (got ? std::string() : got.message()));
    REQUIRE(got);
    REQUIRE(got->size() == expected->size());
    for (size_t i = 0; i < got->size(); ++i)
      compareTensors((*got)[i].name, (*got)[i].tensor, (*expected)[i].tensor,
                     tol.value_or(tolFor((*expected)[i].tensor.dtype())));
  }
#else
  gpuOrWarn();
#endif
}

inline HostTensor rnd(DType t, Shape s, Rng &rng, double lo = -1,
                      double hi = 1) {
  return randomTensor(t, std::move(s), rng, lo, hi);
}

inline HostTensor indices(DType t, Shape s, std::vector<int64_t> values) {
  HostTensor r(t, std::move(s));
  for (size_t i = 0; i < values.size(); ++i)
    setD(r, static_cast<int64_t>(i), static_cast<double>(values[i]));
  return r;
}

inline HostTensor scalarF32(float v) {
  HostTensor t(DType::F32, {1});
  *t.as<float>() = v;
  return t;
}

} // namespace mp::rt::test::cudadevice

#endif // MP_TEST_UNIT_RUNTIME_CUDADEVICETESTSUPPORT_H
