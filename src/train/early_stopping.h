// When a run ends before train.epochs. Early stopping (`train.patience`) with Ultralytics 8.4.190's
// rule (utils/torch_utils.py EarlyStopping): after each validated epoch the best fitness so far
// moves to this epoch when the fitness is higher, or while the best is still exactly 0 (the early
// zero-fitness stage of a run); the run stops once `patience` epochs have passed since the best
// one. Patience 0 never stops; an epoch without validation (train.val false) neither moves nor
// stops anything. Kept apart from the best-checkpoint choice (train_state.h best_fitness), whose
// rule differs in the zero stage, and saved in every checkpoint so a resumed run stops where the
// whole run would. A time limit (`train.time`, hours) as 8.4.190's trainer: after every epoch the
// epoch count becomes ceil(limit / mean epoch time), and the run stops when the limit has passed.
// No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace detrain::train {

struct EarlyStopping {
  double best_fitness = 0.0;
  int64_t best_epoch = 0;  // 1-based epoch of best_fitness (0: none yet), as the reference
  // Set by update(): the next epoch may stop the run, so the reference validates it even without
  // train.val (with train.val false no epoch sets it). Not saved, as the reference's.
  bool possible_stop = false;

  // Epoch `epoch` (1-based) validated with `fitness` (nullopt: not validated). True when the run
  // should stop after it.
  bool update(int64_t epoch, std::optional<double> fitness, int64_t patience);
  // The line the run ends with when update() said stop.
  std::string message(int64_t patience) const;
};

// The epoch count under train.time after `epochs_done` epochs took `seconds` of training, and
// why the run stops now (empty: it goes on). `time_up`: the limit passed inside the last epoch.
struct RunLength {
  int64_t epochs = 0;
  std::string stop;
};
RunLength run_length(double hours, double seconds, int64_t epochs_done, bool time_up);

}  // namespace detrain::train
