// The gradient reducer (dist/grad_reducer.h: c10d::Reducer driven from C++) on two real ranks:
// two threads of this process, each with its own Gloo group on loopback. Each rank records
// what it saw; the assertions run afterwards on the test's thread (Catch2's are not
// thread-safe). Collectives time out after 20 s, so a rank left waiting for a bucket fails
// instead of hanging.
#include <torch/torch.h>  // before Catch: c10's logging defines a CHECK that Catch's must replace

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "common/errors.h"
#include "common/paths.h"
#include "config/config.h"
#include "dist/distributed.h"
#include "dist/grad_reducer.h"
#include "model/yolo_model.h"
#include "test_support.h"

using namespace detrain;
using namespace detrain::dist;

namespace {

// body(rank, dist) on ranks 0 and 1 at once, collectives timing out after `timeout`; rethrows
// the first failure. `meet_at_end`: a barrier after the body (off when a rank fails on purpose).
void on_two_ranks(const std::function<void(int64_t, Distributed&)>& body,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20),
                  bool meet_at_end = true) {
  const int port = test::free_tcp_port();
  std::array<std::exception_ptr, 2> failure;
  const auto run = [&](int64_t rank) {
    try {
      DistEnv env;
      env.source = "env";
      env.rank = env.local_rank = rank;
      env.world_size = env.local_world_size = 2;
      env.master_port = port;
      Distributed dist(env, torch::kCPU, timeout);
      body(rank, dist);
      if (meet_at_end) dist.barrier("the end of the test");  // rank 0's store outlives rank 1's
    } catch (...) {
      failure[static_cast<size_t>(rank)] = std::current_exception();
    }
  };
  std::thread second(run, 1);
  run(0);
  second.join();
  for (const auto& f : failure)
    if (f) std::rethrow_exception(f);
}

std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
  return out;
}

void zero_grads(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

bool all_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i])) return false;
  return true;
}

// A small network with the parameter kinds the detector has: a convolution whose weight (and
// so its gradient) is channels-last, a bias, a matrix. Rank-specific inputs; `bucket_bytes`
// small enough that the reducer cuts several buckets.
struct Net {
  torch::Tensor conv_w, conv_b, fc_w;
  std::vector<torch::Tensor> params() const { return {conv_w, conv_b, fc_w}; }

  Net() {
    // The same weights on both ranks, as the initial broadcast makes them. Each rank is a thread
    // of this process: a generator of its own, not the global one both would reseed at once.
    auto generator = torch::make_generator<at::CPUGeneratorImpl>(5);
    conv_w = torch::randn({8, 3, 3, 3}, generator)
                 .contiguous(torch::MemoryFormat::ChannelsLast)
                 .requires_grad_(true);  // [out, in, kh, kw]
    conv_b = torch::randn({8}, generator).requires_grad_(true);
    fc_w = torch::randn({4, 8}, generator).requires_grad_(true);  // [classes, channels]
  }

  torch::Tensor loss(int64_t rank) const {
    auto generator = torch::make_generator<at::CPUGeneratorImpl>(100 + rank);
    const auto x =
        torch::randn({2, 3, 6, 6}, generator).contiguous(torch::MemoryFormat::ChannelsLast);
    const auto h = torch::conv2d(x, conv_w, conv_b).relu().mean({2, 3});  // [2, 8]
    return torch::matmul(h, fc_w.t()).pow(2).sum();
  }
};

constexpr int64_t kSmallBuckets = 256;  // bytes: the 8x3x3x3 weight alone fills one

}  // namespace

TEST_CASE(
    "the reducer's gradients while backward runs are the mean that averaging after "
    "backward gave, bit for bit, channels-last ones too",
    "[unit][dist]") {
  std::array<std::vector<torch::Tensor>, 2> local, reduced, after;
  std::array<bool, 2> channels_last{};
  on_two_ranks([&](int64_t rank, Distributed& dist) {
    const auto r = static_cast<size_t>(rank);
    Net net;
    GradReducer reducer(dist, net.params(), {kSmallBuckets, GradCompression::kNone});
    net.loss(rank).backward();  // this rank's own gradients, for the expected mean
    local[r] = grads_of(net.params());
    zero_grads(net.params());
    reducer.backward(net.loss(rank), /*reduce=*/true);
    reduced[r] = grads_of(net.params());
    channels_last[r] = net.conv_w.grad().is_contiguous(torch::MemoryFormat::ChannelsLast);
    zero_grads(net.params());
    net.loss(rank).backward();  // the path detrain had: all-reduce after backward
    dist.average_gradients(net.params(), kSmallBuckets);
    after[r] = grads_of(net.params());
  });
  CHECK(channels_last[0]);
  CHECK(all_equal(reduced[0], reduced[1]));
  // Halving is exact in binary floating point, so dividing each rank's gradient by 2 before
  // the sum (the reducer) and halving the sum (the old path) round the same: bit-identical.
  CHECK(all_equal(reduced[0], after[0]));
  for (size_t i = 0; i < reduced[0].size(); ++i) {
    INFO("parameter " << i);
    // Independently: the mean of the two ranks' own gradients in fp64. One fp32 rounding of
    // the sum: within 1 ulp, 2^-23 relative, of the larger input; 1e-6 leaves margin.
    const auto expected = (local[0][i].to(torch::kDouble) + local[1][i].to(torch::kDouble)) / 2;
    const double scale = std::max(1.0, expected.abs().max().item<double>());
    CHECK((reduced[0][i].to(torch::kDouble) - expected).abs().max().item<double>() / scale < 1e-6);
    CHECK_FALSE(torch::equal(local[0][i], local[1][i]));  // the ranks did differ
  }
}

TEST_CASE(
    "micro-batches before the reducing one accumulate without communication; the step "
    "gets the mean of the sums, parameters left out of it included",
    "[unit][dist]") {
  // Integer weights and inputs, so every gradient is an exact integer in fp32 and the sums and
  // the halving are exact: equality, not a tolerance. loss = world * sum((x w)^2) per
  // micro-batch (detrain's losses scale by the world size so that the mean over ranks is the
  // gradient of one process over the global batch).
  const auto weights = [] {
    return std::vector<torch::Tensor>{
        torch::tensor({{1.f, -2.f}, {0.f, 1.f}, {2.f, 1.f}}).requires_grad_(true),  // used always
        torch::tensor({1.f, 3.f}).requires_grad_(true),   // only in micro-batch 1
        torch::tensor({-1.f, 2.f}).requires_grad_(true),  // only on rank 0
        torch::tensor({5.f, 5.f}).requires_grad_(true)};  // never
  };
  const auto inputs = [](int64_t rank, int64_t micro) {  // [2 samples, 3]
    const float s = static_cast<float>(1 + rank * 2 + micro);
    return torch::tensor({{s, 0.f, -1.f}, {1.f, s, 2.f}});
  };
  // Micro-batch `micro` of `rank`: w's term always, u's in micro-batch 0, v's on rank 0.
  const auto loss_of = [&](const std::vector<torch::Tensor>& p, int64_t rank, int64_t micro,
                           double world) {
    const auto x = inputs(rank, micro);
    auto y = torch::matmul(x, p[0]);  // [2, 2]
    if (micro == 0) y = y + p[1];
    if (rank == 0) y = y * p[2];
    return world * y.pow(2).sum();
  };

  std::array<std::vector<torch::Tensor>, 2> after_first, after_step;
  on_two_ranks([&](int64_t rank, Distributed& dist) {
    const auto p = weights();
    GradReducer reducer(dist, p, {kSmallBuckets, GradCompression::kNone});
    reducer.backward(loss_of(p, rank, 0, 2.0), /*reduce=*/false);
    after_first[static_cast<size_t>(rank)] = grads_of(p);
    reducer.backward(loss_of(p, rank, 1, 2.0), /*reduce=*/true);
    after_step[static_cast<size_t>(rank)] = grads_of(p);
  });

  // One process over the global batch: all four micro-batches, loss not scaled.
  const auto one = weights();
  for (int64_t rank = 0; rank < 2; ++rank)
    for (int64_t micro = 0; micro < 2; ++micro) loss_of(one, rank, micro, 1.0).backward();

  // After the first micro-batch each rank holds its own gradients (rank 1 none for v).
  CHECK_FALSE(torch::equal(after_first[0][0], after_first[1][0]));
  CHECK_FALSE(after_first[1][2].defined());
  for (size_t rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const auto& g = after_step[rank];
    CHECK(torch::equal(g[0], one[0].grad()));
    // Used only in the micro-batch that did not reduce: still averaged.
    CHECK(torch::equal(g[1], one[1].grad()));
    // Used on rank 0 only: rank 1 contributes zeros.
    REQUIRE(g[2].defined());
    CHECK(torch::equal(g[2], one[2].grad()));
    // Used nowhere: no gradient, as in one process.
    CHECK_FALSE(g[3].defined());
    CHECK_FALSE(one[3].grad().defined());
  }
}

TEST_CASE(
    "bf16 and fp16 on the wire: both ranks get the same gradients, the mean to the wire "
    "format's precision",
    "[unit][dist]") {
  for (const auto& [compression, name, unit] :
       {std::tuple{GradCompression::kBf16, "bf16", 0x1p-8},
        std::tuple{GradCompression::kFp16, "fp16", 0x1p-11}}) {
    INFO(name);
    std::array<std::vector<torch::Tensor>, 2> local, reduced;
    on_two_ranks([&](int64_t rank, Distributed& dist) {
      const auto r = static_cast<size_t>(rank);
      Net net;
      GradReducer reducer(dist, net.params(), {kSmallBuckets, compression});
      net.loss(rank).backward();
      local[r] = grads_of(net.params());
      zero_grads(net.params());
      reducer.backward(net.loss(rank), /*reduce=*/true);
      reduced[r] = grads_of(net.params());
    });
    CHECK(all_equal(reduced[0], reduced[1]));
    bool rounded = false;
    for (size_t i = 0; i < reduced[0].size(); ++i) {
      INFO("parameter " << i);
      const auto a = local[0][i].to(torch::kDouble), b = local[1][i].to(torch::kDouble);
      const auto exact = (a + b) / 2;
      // Each rank's halved value rounds once to the wire format (unit roundoff u), and so does
      // their sum: |error| <= u (|a| + |b|) / 2 + u |a + b| / 2 <= u (|a| + |b|); 1e-30 for
      // exact zeros.
      const auto bound = unit * (a.abs() + b.abs()) + 1e-30;
      const auto error = (reduced[0][i].to(torch::kDouble) - exact).abs();
      CHECK((error <= bound).all().item<bool>());
      // What fp32 on the wire gives (the first case above shows the reducer gives exactly this).
      const auto fp32_mean = (local[0][i] + local[1][i]) * 0.5;
      rounded = rounded || !torch::equal(reduced[0][i], fp32_mean);
    }
    CHECK(rounded);  // the narrower format was on the wire: some mean did not survive it
  }
}

TEST_CASE(
    "a rank that never sends its buckets: the other fails in backward within the timeout, "
    "saying where",
    "[unit][dist]") {
  std::string message;
  const auto start = std::chrono::steady_clock::now();
  on_two_ranks(
      [&](int64_t rank, Distributed& dist) {
        Net net;
        GradReducer reducer(dist, net.params(), {kSmallBuckets, GradCompression::kNone});
        if (rank == 1) {
          // Alive but elsewhere (a plain backward, no collective) until rank 0 has given up.
          reducer.backward(net.loss(rank), /*reduce=*/false);
          std::this_thread::sleep_for(std::chrono::seconds(4));
          return;
        }
        message = test::thrown_message<DistributedError>(
            [&] { reducer.backward(net.loss(rank), /*reduce=*/true); });
      },
      std::chrono::seconds(2), /*meet_at_end=*/false);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(message);
  CHECK(message.find("rank 0: the backward pass with its gradient all-reduce") == 0);
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK(seconds < 15);  // the 2 s timeout and rank 1's 4 s, not a hang
}

TEST_CASE(
    "measure: the gradient all-reduce of yolo26n and yolo26s alone, after backward and "
    "through the reducer",
    "[.][reducer-measure]") {
  // Not a test: the figures of docs/perf/2026-12-07-ddp-reducer.md. Two ranks in this process,
  // one intra-op thread, each scale's real parameter list with random gradients. "After
  // backward" is Distributed::average_gradients (the path the reducer replaced); "reducer" is a
  // reducing backward of a loss whose gradients are ready at once, so nothing hides the
  // communication. Medians of 7 after one warm-up.
  torch::set_num_threads(1);
  for (const std::string scale : {"n", "s"}) {
    std::array<std::vector<double>, 2> after_ms, reducer_ms, local_ms;
    int64_t numel = 0;
    on_two_ranks(
        [&](int64_t rank, Distributed& dist) {
          config::ModelOptions options;
          options.arch = source_dir() + "/models/yolo26.yaml";
          options.scale = scale;
          torch::manual_seed(1);
          const model::YoloModel model = model::make_model(options, 80);
          std::vector<torch::Tensor> params;
          for (const auto& p : model->parameters())
            if (p.requires_grad()) params.push_back(p);
          std::vector<torch::Tensor> fixed;  // d loss / d p
          for (const auto& p : params) fixed.push_back(torch::randn_like(p));
          if (rank == 0)
            for (const auto& p : params) numel += p.numel();
          GradReducer reducer(dist, params, {25 * 1024 * 1024, GradCompression::kNone});
          const auto loss = [&] {
            torch::Tensor total = torch::zeros({});
            for (size_t i = 0; i < params.size(); ++i) total = total + (params[i] * fixed[i]).sum();
            return total;
          };
          for (int i = 0; i < 8; ++i) {
            for (const auto& p : params) p.mutable_grad() = torch::randn_like(p);
            auto start = std::chrono::steady_clock::now();
            dist.average_gradients(params, 25 * 1024 * 1024);
            const double a =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            const auto l = loss();  // built before the clock: only backward is timed
            for (const auto& p : params) p.mutable_grad().zero_();
            start = std::chrono::steady_clock::now();
            reducer.backward(l, /*reduce=*/true);
            const double b =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            const auto l2 = loss();
            start = std::chrono::steady_clock::now();
            reducer.backward(l2, /*reduce=*/false);  // the same backward, no communication
            const double c =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            if (i == 0) continue;
            after_ms[static_cast<size_t>(rank)].push_back(a);
            reducer_ms[static_cast<size_t>(rank)].push_back(b);
            local_ms[static_cast<size_t>(rank)].push_back(c);
          }
        },
        std::chrono::seconds(120));
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    WARN("yolo26" << scale << ": " << numel << " gradients (" << numel * 4 / 1e6
                  << " MB fp32): all-reduce after backward " << median(after_ms[0])
                  << " ms, reducing backward with nothing to compute " << median(reducer_ms[0])
                  << " ms, the same backward without reducing " << median(local_ms[0])
                  << " ms (rank 0, median of 7)");
  }
}
