// bench/op_profile: self times by operator on the calling thread, nested calls subtracted.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <thread>

#include "bench/op_profile.h"

using detrain::bench::OpProfiler;
using detrain::bench::OpTime;

namespace {

const OpTime* find(const std::vector<OpTime>& ops, const std::string& name) {
  for (const auto& t : ops)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("the op profiler sums self times by operator on its own thread", "[unit][bench]") {
  const auto a = torch::rand({256, 256}), b = torch::rand({256, 256});
  OpProfiler profiler;
  for (int i = 0; i < 5; ++i) (void)torch::mm(a, b);
  // Another thread's operators are not this profile's.
  std::thread([&] { (void)torch::addmm(a, a, b); }).join();
  // aten::linear calls aten::t and aten::matmul inside: each is its own row.
  (void)at::linear(a, b);
  profiler.stop();

  const auto ops = profiler.top(0);
  const OpTime* mm = find(ops, "aten::mm");
  REQUIRE(mm != nullptr);
  CHECK(mm->calls >= 5);
  CHECK(mm->self_ms > 0);
  CHECK(find(ops, "aten::linear") != nullptr);
  CHECK(find(ops, "aten::matmul") != nullptr);
  // No operator of the other thread: addmm only from linear's own call.
  const OpTime* addmm = find(ops, "aten::addmm");
  CHECK((addmm == nullptr || addmm->calls == 1));
  // Sorted by self time; the sum is time spent inside operators, within the span.
  for (size_t i = 1; i < ops.size(); ++i) CHECK(ops[i - 1].self_ms >= ops[i].self_ms);
  CHECK(profiler.total_self_ms() > 0);
  CHECK(profiler.total_self_ms() <= profiler.span_ms());
  CHECK(profiler.top(1).size() == 1);
  // Stopped: later operators are not counted.
  const int64_t calls = mm->calls;
  (void)torch::mm(a, b);
  CHECK(find(profiler.top(0), "aten::mm")->calls == calls);
}

TEST_CASE("one op profiler per thread", "[unit][bench]") {
  OpProfiler first;
  CHECK_THROWS_AS(OpProfiler(), std::logic_error);
  first.stop();
  OpProfiler second;  // after stop, the thread may start another
  second.stop();
}
