// The live training progress line and a fixed-width table printer. On a terminal the line
// rewrites itself with '\r' (at most every refresh interval); in logs (not a TTY) it prints a
// plain line every `plain_interval_s` seconds and at epoch end; quiet prints nothing. The
// reference's tqdm bar shows the same fields; this one adds the data-wait share.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace detrain {

enum class ProgressMode {
  kAuto,   // live on a TTY, plain otherwise
  kLive,   // '\r'-rewritten line
  kPlain,  // one line per interval
  kOff     // nothing (CI logs that only want the epoch summaries)
};

// "auto" | "live" | "plain" | "off"; throws ConfigError naming `key` otherwise.
ProgressMode parse_progress_mode(const std::string& text, const std::string& key = "progress");

// What one progress line shows.
struct ProgressState {
  int64_t epoch = 0;  // 0-based; shown 1-based as epoch/epochs
  int64_t epochs = 1;
  int64_t iter = 0;                                    // iterations done in this epoch
  int64_t total = 0;                                   // iterations per epoch
  std::vector<std::pair<std::string, double>> losses;  // running means, in header order
  int64_t instances = 0;                               // targets in the last batch
  int64_t imgsz = 0;
  double images_per_s = 0;
  double data_wait_share = 0;  // fraction of the epoch's wall time spent waiting for batches
  double elapsed_s = 0;        // since the epoch started
  double memory_gb = 0;
  double run_eta_s = -1;  // time left in the whole run (< 0: not shown)
};

// "1:02:03" or "02:03".
std::string format_duration(double seconds);

class ProgressLine {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  // `is_tty` decides kAuto. `clock` defaults to a steady clock (tests pass their own).
  ProgressLine(ProgressMode mode, std::ostream& out, bool is_tty, double plain_interval_s = 30.0,
               Clock clock = {});

  // Column header, printed once per epoch before the first line (not in kOff mode).
  void header(const std::vector<std::string>& loss_names);
  // Shows `state` after the refresh interval (live: 0.1 s, plain: interval); not iter == total.
  void update(const ProgressState& state);
  // The epoch's final line, always shown (except kOff); ends the live line with '\n'.
  void finish(const ProgressState& state);

  // The text of a line (no '\r' or '\n'), aligned under header_text().
  static std::string line_text(const ProgressState& state);
  static std::string header_text(const std::vector<std::string>& loss_names);

  ProgressMode mode() const { return mode_; }

 private:
  void emit(const ProgressState& state, bool final_line);

  ProgressMode mode_;
  std::ostream& out_;
  double interval_s_;
  Clock clock_;
  double last_emit_s_ = -1e300;
  size_t last_width_ = 0;
  bool live_open_ = false;
};

// Fixed-width text table: the first column left-aligned, the others right-aligned, two spaces
// between columns, widths from the widest cell. Rows shorter than the header are padded.
std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// Fixed-point text of a value ("0.512"); NaN gives "nan".
std::string fixed(double value, int decimals);

}  // namespace detrain
