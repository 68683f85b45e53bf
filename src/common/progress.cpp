// Progress line and table printer; see progress.h.
#include "common/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "common/errors.h"

namespace detrain {
namespace {

constexpr double kLiveRefreshS = 0.1;
constexpr int kLossWidth = 10;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

ProgressMode parse_progress_mode(const std::string& text, const std::string& key) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "live") return ProgressMode::kLive;
  if (text == "plain") return ProgressMode::kPlain;
  if (text == "off") return ProgressMode::kOff;
  throw ConfigError("config: '" + key + "' is '" + text + "'; expected auto, live, plain or off");
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(std::llround(seconds));
  const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
  char buf[32];
  if (h > 0)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", static_cast<long long>(m),
                  static_cast<long long>(s));
  return buf;
}

std::string ProgressLine::header_text(const std::vector<std::string>& loss_names) {
  std::string s = pad_left("Epoch", 9) + pad_left("Mem", 8);
  for (const auto& name : loss_names) s += pad_left(name + "_loss", kLossWidth);
  s += pad_left("Instances", 10) + pad_left("Size", 6);
  return s;
}

std::string ProgressLine::line_text(const ProgressState& st) {
  std::string s = pad_left(std::to_string(st.epoch + 1) + "/" + std::to_string(st.epochs), 9);
  s += pad_left(fixed(st.memory_gb, 2) + "G", 8);
  for (const auto& loss : st.losses) s += pad_left(fixed(loss.second, 4), kLossWidth);
  s += pad_left(std::to_string(st.instances), 10) + pad_left(std::to_string(st.imgsz), 6);
  const double fraction = st.total > 0 ? static_cast<double>(st.iter) / st.total : 0.0;
  const std::string count = std::to_string(st.iter) + "/" + std::to_string(st.total);
  s += "  " + pad_left(count, 2 * std::to_string(st.total).size() + 1);
  s += " " + pad_left(fixed(100.0 * fraction, 0), 3) + "%";
  s += "  " + fixed(st.images_per_s, 1) + " img/s";
  s += "  data " + fixed(100.0 * st.data_wait_share, 0) + "%";
  const double eta = st.iter > 0 ? st.elapsed_s / st.iter * (st.total - st.iter) : NAN;
  s += "  " + format_duration(st.elapsed_s) + "<" + format_duration(eta);
  if (st.run_eta_s >= 0) s += "  run " + format_duration(st.run_eta_s) + " left";
  return s;
}

ProgressLine::ProgressLine(ProgressMode mode, std::ostream& out, bool is_tty,
                           double plain_interval_s, Clock clock)
    : mode_(mode),
      out_(out),
      interval_s_(plain_interval_s),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {
  if (mode_ == ProgressMode::kAuto) mode_ = is_tty ? ProgressMode::kLive : ProgressMode::kPlain;
}

void ProgressLine::header(const std::vector<std::string>& loss_names) {
  if (mode_ == ProgressMode::kOff) return;
  if (live_open_) out_ << "\n";
  live_open_ = false;
  out_ << header_text(loss_names) << "\n" << std::flush;
  last_emit_s_ = -1e300;
}

void ProgressLine::update(const ProgressState& state) {
  // The epoch's last iteration is finish()'s line: shown here too, a plain line whose interval
  // had passed (or the first of a one-batch epoch) printed the 100 % line twice.
  if (mode_ == ProgressMode::kOff || (state.total > 0 && state.iter >= state.total)) return;
  const double now = clock_();
  const double interval = mode_ == ProgressMode::kLive ? kLiveRefreshS : interval_s_;
  if (now - last_emit_s_ < interval) return;
  last_emit_s_ = now;
  emit(state, false);
}

void ProgressLine::finish(const ProgressState& state) {
  if (mode_ == ProgressMode::kOff) return;
  emit(state, true);
  last_emit_s_ = clock_();
}

void ProgressLine::emit(const ProgressState& state, bool final_line) {
  const std::string text = line_text(state);
  if (mode_ == ProgressMode::kLive) {
    // Pad over the previous (possibly longer) line instead of relying on terminal escapes.
    out_ << "\r" << pad_right(text, last_width_);
    last_width_ = text.size();
    live_open_ = !final_line;
    if (final_line) {
      out_ << "\n";
      last_width_ = 0;
    }
  } else {
    out_ << text << "\n";
  }
  out_ << std::flush;
}

std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  auto render = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      if (c > 0) line += "  ";
      line += c == 0 ? pad_right(cell, width[c]) : pad_left(cell, width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = render(header);
  for (const auto& row : rows) out += render(row);
  return out;
}

}  // namespace detrain
