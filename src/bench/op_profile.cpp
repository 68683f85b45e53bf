// By-operator self times of the calling thread; see op_profile.h.
#include "bench/op_profile.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace detrain::bench {
namespace {

// One operator call in flight: when it started, and the time its nested calls took.
struct Frame : at::ObserverContext {
  int64_t start_ns = 0;
  int64_t child_ns = 0;
  Frame* parent = nullptr;
};

// RecordFunction's callbacks are plain functions without user data. The profiler and the
// innermost open call are therefore the profiling thread's own state: thread-local, set only
// while an OpProfiler lives on that thread, so other threads' calls (the loader's, intra-op
// workers') see none and are not counted.
thread_local OpProfiler* tl_profiler = nullptr;
thread_local Frame* tl_innermost = nullptr;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction&) {
  if (!tl_profiler) return nullptr;
  auto frame = std::make_unique<Frame>();
  frame->parent = tl_innermost;
  tl_innermost = frame.get();
  frame->start_ns = now_ns();
  return frame;
}

void leave(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (!context) return;
  auto* frame = static_cast<Frame*>(context);
  const int64_t duration = now_ns() - frame->start_ns;
  tl_innermost = frame->parent;
  if (tl_innermost) tl_innermost->child_ns += duration;
  if (tl_profiler) tl_profiler->add(fn.name(), duration - frame->child_ns);
}

}  // namespace

OpProfiler::OpProfiler() {
  if (tl_profiler) throw std::logic_error("OpProfiler: this thread already has one running");
  tl_profiler = this;
  tl_innermost = nullptr;
  // A thread-local callback: RecordFunction calls it on this thread only (and on threads that
  // inherit this thread's state, where tl_profiler is null).
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(enter, leave)
          .needsInputs(false)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  running_ = true;
  start_ = std::chrono::steady_clock::now();
}

OpProfiler::~OpProfiler() {
  if (running_) stop();
}

void OpProfiler::stop() {
  if (!running_) return;
  span_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  at::removeCallback(handle_);
  tl_profiler = nullptr;
  tl_innermost = nullptr;
  running_ = false;
}

void OpProfiler::add(const char* name, int64_t self_ns) {
  OpTime& t = by_name_[name];
  if (t.name.empty()) t.name = name;
  t.self_ms += static_cast<double>(self_ns) * 1e-6;
  ++t.calls;
}

std::vector<OpTime> OpProfiler::top(int64_t n) const {
  std::vector<OpTime> all;
  all.reserve(by_name_.size());
  for (const auto& [name, t] : by_name_) all.push_back(t);
  std::sort(all.begin(), all.end(), [](const OpTime& a, const OpTime& b) {
    return a.self_ms != b.self_ms ? a.self_ms > b.self_ms : a.name < b.name;
  });
  if (n > 0 && static_cast<int64_t>(all.size()) > n) all.resize(static_cast<size_t>(n));
  return all;
}

double OpProfiler::total_self_ms() const {
  double sum = 0;
  for (const auto& [name, t] : by_name_) sum += t.self_ms;
  return sum;
}

}  // namespace detrain::bench
