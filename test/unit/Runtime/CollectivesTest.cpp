// Tests of the data-parallel runtime pieces without MPI: N ranks are N
// threads of this process, joined by an in-process Communicator
// (ThreadRanks), so that what a rank computes can be compared with one
// process on the whole batch:
//
//  * Communicator::allReduce: sums, maxima and minima of every dtype, the
//    16-bit ones rounded once per combination, NaN kept by max; its
//    statistics; the single-process communicator leaves data alone;
//  * comm.all_reduce: a bucket of f32/f16/bf16 buffers averaged over 1, 2
//    and 4 ranks in f32 (the sum divided at the end) and in bf16 / f16
//    (divided before it rounds), max for a found-inf flag; bad attributes
//    and buffers are errors;
//  * batch norm training and backward with sync_ranks: each rank's half (or
//    quarter) of the batch gives the whole batch's y, dx and running
//    statistics, and dscale / dbias that average to the whole batch's.
#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::cpu;

namespace {

/// The meeting point of N in-process ranks: each all-reduce waits for all
/// of them, combines their buffers in rank order and hands everyone the
/// result.
struct Meeting {
  explicit Meeting(int ranks) : ranks(ranks) {}
  const int ranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<unsigned char>> contributions;
  std::vector<unsigned char> result;
  int arrived = 0, collected = 0;
  uint64_t round = 0;
};

class ThreadRank final : public Communicator {
public:
  ThreadRank(Meeting &meeting, int rank) : meeting_(meeting), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return meeting_.ranks; }
  std::string describe() const override { return "threads"; }

protected:
  Status broadcastBytes(void *data, size_t bytes, int root) override {
    // A maximum over bytes where every rank but the root holds zeros.
    std::vector<uint64_t> words((bytes + 7) / 8, 0);
    if (rank_ == root)
      std::memcpy(words.data(), data, bytes);
    if (Status s = reduceInPlace(words.data(), words.size(), DType::U64,
                                 CollectiveOp::Max);
        !s)
      return s;
    std::memcpy(data, words.data(), bytes);
    return Status::ok();
  }
  Status reduceInPlace(void *data, size_t count, DType dtype,
                       CollectiveOp op) override {
    const size_t bytes = count * byteSize(dtype);
    std::unique_lock<std::mutex> lock(meeting_.mutex);
    // Wait until the previous round's results are all collected.
    meeting_.changed.wait(lock, [&] { return meeting_.collected == 0; });
    if (meeting_.contributions.empty())
      meeting_.contributions.resize(static_cast<size_t>(meeting_.ranks));
    auto *bytesIn = static_cast<unsigned char *>(data);
    meeting_.contributions[static_cast<size_t>(rank_)].assign(bytesIn,
                                                              bytesIn + bytes);
    const uint64_t round = meeting_.round;
    if (++meeting_.arrived == meeting_.ranks) {
      meeting_.result = meeting_.contributions[0];
      for (int r = 1; r < meeting_.ranks; ++r)
        combineElements(meeting_.contributions[static_cast<size_t>(r)].data(),
                        meeting_.result.data(), count, dtype, op);
      meeting_.arrived = 0;
      meeting_.collected = meeting_.ranks;
      ++meeting_.round;
      meeting_.changed.notify_all();
    } else {
      const bool done = meeting_.changed.wait_for(
          lock, std::chrono::duration<double>(timeoutSeconds()),
          [&] { return meeting_.round != round; });
      if (!done)
        return Status::error("timed out waiting for the other ranks");
    }
    std::memcpy(data, meeting_.result.data(), bytes);
    if (--meeting_.collected == 0) {
      meeting_.contributions.clear();
      meeting_.changed.notify_all();
    }
    return Status::ok();
  }

private:
  Meeting &meeting_;
  int rank_;
};

/// Runs body(rank, communicator) on `ranks` threads and waits for them.
void onRanks(int ranks, const std::function<void(int, Communicator &)> &body) {
  Meeting meeting(ranks);
  std::vector<std::unique_ptr<ThreadRank>> comms;
  for (int r = 0; r < ranks; ++r)
    comms.push_back(std::make_unique<ThreadRank>(meeting, r));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { body(r, *comms[static_cast<size_t>(r)]); });
  for (std::thread &t : threads)
    t.join();
}

PlanCall allReduceCall(const std::string &reduction, DType wire) {
  PlanCall call;
  call.kind = "comm.all_reduce";
  call.attributes = {{"reduction", PlanAttrValue(reduction)},
                     {"reduce_type", PlanAttrValue(int64_t(wire))}};
  return call;
}

Status runCall(const PlanCall &call, std::vector<TensorView> operands,
               std::vector<TensorView> results, Communicator *comm) {
  CallFn fn = cpuCallTable().find(call.kind);
  REQUIRE(fn != nullptr);
  CallArgs args{call, std::move(operands), std::move(results)};
  args.communicator = comm;
  return fn(args);
}

/// Rank r's slice [r * n / ranks, (r + 1) * n / ranks) of x's first dim.
HostTensor sliceOf(const HostTensor &x, int r, int ranks) {
  Shape shape = x.shape();
  const int64_t rows = shape[0] / ranks;
  shape[0] = rows;
  HostTensor out(x.dtype(), shape);
  const size_t rowBytes = x.byteCount() / static_cast<size_t>(x.shape()[0]);
  std::memcpy(out.data(),
              static_cast<const unsigned char *>(x.data()) +
                  static_cast<size_t>(r * rows) * rowBytes,
              out.byteCount());
  return out;
}

} // namespace

TEST_CASE("all-reduce combines every dtype over the ranks",
          "[cpu][collectives]") {
  onRanks(3, [](int r, Communicator &comm) {
    std::vector<float> f{float(r), -float(r), 0.5f};
    REQUIRE(comm.allReduce(f.data(), f.size(), DType::F32, CollectiveOp::Sum)
                .isOk());
    CHECK(f == std::vector<float>{3.0f, -3.0f, 1.5f});
    std::vector<double> d{double(r) + 0.25};
    REQUIRE(comm.allReduce(d.data(), 1, DType::F64, CollectiveOp::Max).isOk());
    CHECK(d[0] == 2.25);
    std::vector<int64_t> i{int64_t(10 - r)};
    REQUIRE(comm.allReduce(i.data(), 1, DType::I64, CollectiveOp::Min).isOk());
    CHECK(i[0] == 8);
    std::vector<uint64_t> u{~uint64_t(0) - uint64_t(r)};
    REQUIRE(comm.allReduce(u.data(), 1, DType::U64, CollectiveOp::Max).isOk());
    CHECK(u[0] == ~uint64_t(0));
    // 16-bit sums: f32 arithmetic, one rounding per combination.
    std::vector<uint16_t> h{detail::floatToHalfBits(1.0f / 3.0f)};
    REQUIRE(comm.allReduce(h.data(), 1, DType::F16, CollectiveOp::Sum).isOk());
    const float third =
        detail::halfBitsToFloat(detail::floatToHalfBits(1.0f / 3.0f));
    const float twoThirds =
        detail::halfBitsToFloat(detail::floatToHalfBits(third + third));
    CHECK(detail::halfBitsToFloat(h[0]) ==
          detail::halfBitsToFloat(detail::floatToHalfBits(twoThirds + third)));
    // A NaN on one rank wins a maximum (a found-inf flag is never lost).
    std::vector<uint16_t> b{detail::floatToBFloat16Bits(
        r == 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f)};
    REQUIRE(comm.allReduce(b.data(), 1, DType::BF16, CollectiveOp::Max).isOk());
    CHECK(std::isnan(detail::bfloat16BitsToFloat(b[0])));
    CHECK(comm.stats().collectives == 6);
    CHECK(comm.stats().bytes == 3 * 4 + 8 + 8 + 8 + 2 + 2);
    // A broadcast: rank 1's bytes everywhere.
    char id[12] = {0};
    if (r == 1)
      std::memcpy(id, "nccl-id-of-1", sizeof id);
    REQUIRE(comm.broadcast(id, sizeof id, 1).isOk());
    CHECK(std::memcmp(id, "nccl-id-of-1", sizeof id) == 0);
    CHECK_FALSE(comm.broadcast(id, sizeof id, 3).isOk());
  });
  std::shared_ptr<Communicator> alone = makeSingleProcessCommunicator();
  std::vector<float> v{1.5f, -2.0f};
  REQUIRE(alone->allReduce(v.data(), 2, DType::F32, CollectiveOp::Sum).isOk());
  CHECK(v == std::vector<float>{1.5f, -2.0f});
  CHECK(alone->size() == 1);
  Status bad = alone->allReduce(v.data(), 2, DType::I32, CollectiveOp::Sum);
  CHECK_FALSE(bad.isOk());
  CHECK_THAT(bad.message(), Catch::Contains("not supported"));
}

TEST_CASE("comm.all_reduce averages a bucket of gradients",
          "[cpu][collectives]") {
  Rng rng(17);
  for (int ranks : {1, 2, 4}) {
    // Rank r's gradients: a[r] (f32) and b[r] (bf16, stored as given).
    std::vector<HostTensor> a, b, c;
    for (int r = 0; r < ranks; ++r) {
      a.push_back(randomTensor(DType::F32, {3, 5}, rng, -4.0, 4.0));
      b.push_back(randomTensor(DType::BF16, {7}, rng, -4.0, 4.0));
      c.push_back(randomTensor(DType::F16, {2, 2}, rng, -4.0, 4.0));
    }
    for (DType wire : {DType::F32, DType::BF16, DType::F16}) {
      INFO(ranks << " ranks, reduce type " << dtypeName(wire));
      std::vector<HostTensor> ya, yb, yc;
      for (int r = 0; r < ranks; ++r) {
        ya.emplace_back(DType::F32, Shape{3, 5});
        yb.emplace_back(DType::BF16, Shape{7});
        yc.emplace_back(DType::F16, Shape{2, 2});
      }
      onRanks(ranks, [&](int r, Communicator &comm) {
        size_t i = static_cast<size_t>(r);
        REQUIRE(runCall(allReduceCall("mean", wire),
                        {a[i].view(), b[i].view(), c[i].view()},
                        {ya[i].view(), yb[i].view(), yc[i].view()}, &comm)
                    .isOk());
      });
      // The reference, written out: f32 sums then one division; 16-bit:
      // each term divided and rounded, summed with a rounding per addition
      // in rank order, then widened and rounded to the buffer's type.
      auto expected = [&](const std::vector<HostTensor> &xs, int64_t k) {
        if (wire == DType::F32) {
          float sum = 0;
          for (const HostTensor &x : xs)
            sum += static_cast<float>(getD(x, k));
          return static_cast<double>(sum / static_cast<float>(ranks));
        }
        double acc = 0;
        for (size_t r = 0; r < xs.size(); ++r) {
          double term = roundTo(wire, getD(xs[r], k) / ranks);
          acc = r == 0 ? term
                       : roundTo(wire,
                                 static_cast<double>(static_cast<float>(acc) +
                                                     static_cast<float>(term)));
        }
        return acc;
      };
      for (int r = 0; r < ranks; ++r) {
        // Every rank holds the same result.
        const size_t i = static_cast<size_t>(r);
        for (int64_t k = 0; k < 15; ++k)
          CHECK(getD(ya[i], k) == roundTo(DType::F32, expected(a, k)));
        for (int64_t k = 0; k < 7; ++k)
          CHECK(getD(yb[i], k) == roundTo(DType::BF16, expected(b, k)));
        for (int64_t k = 0; k < 4; ++k)
          CHECK(getD(yc[i], k) == roundTo(DType::F16, expected(c, k)));
      }
    }
  }
  // A found-inf flag: the maximum, set if any rank saw a non-finite value.
  std::vector<HostTensor> flags, agreed;
  for (int r = 0; r < 4; ++r) {
    flags.push_back(filled(DType::F32, {1}, r == 2 ? 1.0 : 0.0));
    agreed.emplace_back(DType::F32, Shape{1});
  }
  onRanks(4, [&](int r, Communicator &comm) {
    size_t i = static_cast<size_t>(r);
    REQUIRE(runCall(allReduceCall("max", DType::F32), {flags[i].view()},
                    {agreed[i].view()}, &comm)
                .isOk());
  });
  for (const HostTensor &f : agreed)
    CHECK(getD(f, 0) == 1.0);
  // Without a communicator: one rank (the 16-bit reduce type still rounds).
  HostTensor x = tensor(DType::F32, {2}, {1.0 / 3.0, 2.5});
  HostTensor y(DType::F32, {2});
  REQUIRE(runCall(allReduceCall("mean", DType::BF16), {x.view()}, {y.view()},
                  nullptr)
              .isOk());
  CHECK(getD(y, 0) == roundTo(DType::BF16, 1.0 / 3.0));
  CHECK(getD(y, 1) == 2.5);
}

TEST_CASE("comm.all_reduce refuses bad attributes and buffers",
          "[cpu][collectives]") {
  HostTensor x(DType::F32, {2}), y(DType::F32, {2}), z(DType::F16, {2}),
      w(DType::F32, {3});
  auto error = [](const Status &s, const std::string &phrase) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK_THAT(s.message(), Catch::Contains(phrase));
  };
  error(runCall(allReduceCall("product", DType::F32), {x.view()}, {y.view()},
                nullptr),
        "reduction 'product'");
  error(runCall(allReduceCall("mean", DType::F64), {x.view()}, {y.view()},
                nullptr),
        "reduce_type f64");
  error(runCall(allReduceCall("mean", DType::F32), {x.view()}, {z.view()},
                nullptr),
        "operand #0 is f32 and result #0 is f16");
  error(runCall(allReduceCall("mean", DType::F32), {x.view()}, {w.view()},
                nullptr),
        "each result is its operand's float type and shape");
  error(runCall(allReduceCall("mean", DType::F32), {x.view(), x.view()},
                {y.view()}, nullptr),
        "as many results");
}

TEST_CASE("batch norm over ranks equals batch norm over the whole batch",
          "[cpu][collectives][backward]") {
  Rng rng(23);
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    const Shape shape =
        layout == Layout::NCHW ? Shape{8, 3, 2, 2} : Shape{8, 2, 2, 3};
    const int64_t C = 3;
    HostTensor x = randomTensor(DType::F32, shape, rng, -1.0, 3.0);
    HostTensor dy = randomTensor(DType::F32, shape, rng);
    HostTensor scale = randomTensor(DType::F32, {C}, rng, 0.5, 1.5),
               bias = randomTensor(DType::F32, {C}, rng);
    HostTensor mean = randomTensor(DType::F32, {C}, rng),
               var = randomTensor(DType::F32, {C}, rng, 0.5, 2.0);
    BatchNormOptions o;
    o.epsilon = 1e-3f;
    o.layout = layout;
    HostTensor y(DType::F32, shape), rm(DType::F32, {C}), rv(DType::F32, {C});
    REQUIRE(batchNormTraining(x.view(), scale.view(), bias.view(), mean.view(),
                              var.view(), y.view(), rm.view(), rv.view(), o)
                .isOk());
    HostTensor dx(DType::F32, shape), dscale(DType::F32, {C}),
        dbias(DType::F32, {C});
    REQUIRE(batchNormBackward(x.view(), scale.view(), dy.view(), dx.view(),
                              dscale.view(), dbias.view(), o)
                .isOk());
    for (int ranks : {2, 4}) {
      INFO(ranks << " ranks, layout " << int(layout));
      std::vector<HostTensor> ys, dxs, dscales, dbiases, rms, rvs;
      std::vector<HostTensor> xs, dys;
      for (int r = 0; r < ranks; ++r) {
        xs.push_back(sliceOf(x, r, ranks));
        // Each rank's loss is the mean over its own slice: its dy is
        // `ranks` times the whole batch's, and the gradient buckets divide
        // by `ranks` again.
        HostTensor d = sliceOf(dy, r, ranks);
        for (int64_t i = 0; i < d.numElements(); ++i)
          setD(d, i, getD(d, i) * ranks);
        dys.push_back(std::move(d));
        ys.emplace_back(DType::F32, xs.back().shape());
        dxs.emplace_back(DType::F32, xs.back().shape());
        dscales.emplace_back(DType::F32, Shape{C});
        dbiases.emplace_back(DType::F32, Shape{C});
        rms.emplace_back(DType::F32, Shape{C});
        rvs.emplace_back(DType::F32, Shape{C});
      }
      onRanks(ranks, [&](int r, Communicator &comm) {
        const size_t i = static_cast<size_t>(r);
        BatchNormOptions synced = o;
        synced.syncRanks = &comm;
        REQUIRE(batchNormTraining(xs[i].view(), scale.view(), bias.view(),
                                  mean.view(), var.view(), ys[i].view(),
                                  rms[i].view(), rvs[i].view(), synced)
                    .isOk());
        REQUIRE(batchNormBackward(xs[i].view(), scale.view(), dys[i].view(),
                                  dxs[i].view(), dscales[i].view(),
                                  dbiases[i].view(), synced)
                    .isOk());
      });
      std::vector<double> dscaleMean(static_cast<size_t>(C), 0.0),
          dbiasMean(static_cast<size_t>(C), 0.0);
      for (int r = 0; r < ranks; ++r) {
        const size_t i = static_cast<size_t>(r);
        expectClose(values(ys[i]), values(sliceOf(y, r, ranks)), 1e-5, 1e-5,
                    "y");
        // dx in the ranks' units: `ranks` times the whole batch's.
        std::vector<double> want = values(sliceOf(dx, r, ranks));
        for (double &v : want)
          v *= ranks;
        expectClose(values(dxs[i]), want, 1e-5, 1e-5, "dx");
        expectClose(values(rms[i]), values(rm), 1e-6, 1e-6, "running mean");
        expectClose(values(rvs[i]), values(rv), 1e-5, 1e-6, "running var");
        for (int64_t c = 0; c < C; ++c) {
          dscaleMean[static_cast<size_t>(c)] += getD(dscales[i], c) / ranks;
          dbiasMean[static_cast<size_t>(c)] += getD(dbiases[i], c) / ranks;
        }
      }
      // This rank's sums: their average over the ranks is the whole batch's.
      expectClose(dscaleMean, values(dscale), 1e-5, 1e-5, "dscale");
      expectClose(dbiasMean, values(dbias), 1e-5, 1e-5, "dbias");
    }
  }
}
