// Copies what the default spdlog logger says into a stream while alive (messages only, one a
// line), for tests that check what a user is told.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <sstream>

namespace detrain::test {

class LogCapture {
 public:
  explicit LogCapture(std::ostringstream& out)
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out)) {
    sink_->set_pattern("%v");
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

 private:
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace detrain::test
