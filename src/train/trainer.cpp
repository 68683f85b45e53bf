// The training loop; see trainer.h. The parts are built in train_parts.cpp, one iteration's
// maths is train_step.cpp, the end of an epoch is epoch_end.cpp, and the loop's state and its
// checkpoint form are train_state.cpp. What is left here is the loop itself, top to bottom:
// set-up, resume, then epochs of iterations, each epoch ended by validation and checkpoints,
// with a rollback when a step or a validation diverges.
#include "train/trainer.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "ckpt/checkpoint_files.h"
#include "common/atomic_file.h"
#include "common/cpu_features.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/timer.h"
#include "compat/deterministic.h"
#include "compat/torch_compat.h"
#include "data/loader.h"
#include "dist/world.h"
#include "model/channels_last.h"
#include "model/precision.h"
#include "report/batch_plots.h"
#include "report/metrics_log.h"
#include "report/plots_charts.h"
#include "report/run_dir.h"
#include "report/tensorboard_log.h"
#include "train/auto_resume.h"
#include "train/divergence.h"
#include "train/epoch_end.h"
#include "train/iteration_report.h"
#include "train/load_watch.h"
#include "train/resume.h"
#include "train/run_log.h"
#include "train/train_parts.h"
#include "train/train_state.h"
#include "train/train_step.h"

namespace detrain::train {

class Trainer {
 public:
  explicit Trainer(const TrainRequest& r)
      : request_(r), resolved_(r.config), x_(resolved_.experiment) {}
  // The thread count the load watch lowered is the process's again (bench, tests and `val`
  // after `train` run on in this process).
  ~Trainer() {
    if (threads_follow_load_ && compat::num_threads() != all_threads_)
      compat::set_num_threads(all_threads_);
  }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  TrainSummary run();

 private:
  void build();
  // --resume, or what train.resume=auto finds (rank 0 looks, every rank follows); sets paths_
  // and resume_from_.
  void choose_run_directory();
  void open_run_directory();
  void resume(const std::string& where);
  // Rank 0's TensorBoard event file (train.tensorboard): a new run's, or a resumed one's.
  void open_tensorboard(bool resuming);
  // Runs epoch `position.epoch` from `position.iter_in_epoch` until it completes, a stop
  // request ends it, or a step diverges.
  EpochOutcome train_epoch();
  // Validates, records and saves the epoch (rank 0); diverged when its validation did.
  EpochOutcome finish_epoch(double seconds);
  // Back to the epoch's start with half the learning rate after `problem`, or NumericError
  // when train.max_bad_steps rollbacks are used up.
  void roll_back(const std::string& problem);
  // Training wall time of the whole run so far (train.time), kept in state_.train_seconds.
  double training_seconds() const { return seconds_before_ + loop_clock_.seconds(); }
  // Rebuilds the schedule when train.time changed the epoch count it was built for.
  void follow_epoch_count();
  // The thread count or train.precision=auto the load now calls for (load_watch.h).
  void watch_load();
  ckpt::Checkpoint checkpoint() const { return capture_checkpoint(state_, parts_, resolved_); }
  bool main() const { return world_->is_main(); }

  const TrainRequest& request_;
  const config::ResolvedConfig resolved_;
  const config::Experiment& x_;
  Stopwatch run_clock_;        // this process's part of the run (the summary's total time)
  Stopwatch loop_clock_;       // from the first iteration of this process (train.time)
  double seconds_before_ = 0;  // training time of the run before this process (a resume)
  bool time_up_ = false;       // train.time ran out inside the current epoch
  std::string stop_reason_;    // why the run ended before its epochs
  std::string resume_from_;    // the checkpoint this process continues (empty: a new run)
  bool requeue_ = false;       // the ranks agreed to stop for train.requeue_signal
  dist::Placement placement_;
  std::optional<compat::DeterministicScope> deterministic_;  // runtime.deterministic, this run
  model::Precision precision_ = model::Precision::kBf16;
  // train.precision=auto on one CPU process: re-checked against the load while training.
  std::optional<LoadWatch> load_watch_;
  bool threads_follow_load_ = false;  // runtime.threads=0, one CPU process
  int all_threads_ = 1;               // the intra-op threads on idle cores
  TrainingData data_;
  std::unique_ptr<dist::World> world_;
  TrainParts parts_;
  std::unique_ptr<TrainStep> step_;
  TrainState state_;
  std::optional<ckpt::Checkpoint> good_state_;  // taken at the start of each epoch
  report::RunPaths paths_;
  std::unique_ptr<report::TensorBoardLog> tensorboard_;  // rank 0, train.tensorboard
  std::unique_ptr<EpochEnd> epoch_end_;                  // rank 0
  std::unique_ptr<IterationReport> report_;
  int64_t iterations_this_process_ = 0;
};

void Trainer::build() {
  placement_ = dist::place_process(x_);
  // Before the model is built, as the reference's init_seeds; undone when the run ends.
  deterministic_.emplace(x_.runtime.deterministic, x_.runtime.deterministic_warn_only);
  // runtime.threads=0 on a single CPU process: the intra-op threads follow the load (ranks
  // would sample different loads, and must agree).
  threads_follow_load_ =
      x_.runtime.threads == 0 && placement_.device.is_cpu() && placement_.env.world_size == 1;
  precision_ = model::effective_precision(model::parse_precision(x_.train.precision),
                                          placement_.device, threads_follow_load_);
  spdlog::info("{}; {}", placement_.runtime_summary, compat::deterministic_state().describe());
  all_threads_ = compat::num_threads();
  if (threads_follow_load_) {
    const int start_threads = threads_at_startup_load(all_threads_);
    if (start_threads < all_threads_) {
      compat::set_num_threads(start_threads);
      spdlog::info(
          "intra-op threads: {} of {} (busy at start: {}; runtime.threads=0 follows the load)",
          start_threads, all_threads_, format_machine_load(*startup_machine_load()));
    }
  }
  const model::MemoryFormatDecision layout =
      model::choose_memory_format(x_.runtime.memory_format, placement_.device);
  spdlog::info("memory format {}", model::describe(layout));
  data_ = build_training_data(x_);
  // The process group comes after the data scan, so no rank scans while others wait in a
  // collective.
  world_ = dist::make_world(placement_, x_);
  parts_ = build_parts(x_, data_, *world_, placement_.device, precision_ == model::Precision::kBf16,
                       layout.format);
  spdlog::info("BatchNorm + SiLU {}", model::describe(parts_.bn_silu));
  step_ = std::make_unique<TrainStep>(parts_, *world_,
                                      StepOptions::from(x_.train, placement_.device, precision_));
  // The load re-checked while training (load_watch.h): the thread count follows it, or else
  // train.precision=auto does where its rule would take BF16 on idle cores. Ranks would sample
  // different loads (and must agree); a CUDA run always takes BF16.
  model::AutoPrecisionInputs idle;
  idle.cpu = cpu_features();
  idle.threads = all_threads_;
  idle.load = MachineLoad{0, all_threads_};
  const bool precision_follows_load =
      model::parse_precision(x_.train.precision) == model::Precision::kAuto &&
      placement_.device.is_cpu() && world_->size() == 1 &&
      model::choose_auto_precision(idle).precision == model::Precision::kBf16;
  if (threads_follow_load_ || precision_follows_load)
    load_watch_.emplace(threads_follow_load_ ? compat::num_threads() < all_threads_
                                             : precision_ != model::Precision::kBf16,
                        all_threads_);
  state_.world_size = world_->size();
  state_.position.batches_per_epoch = parts_.train_loader->batches_per_epoch();
}

void Trainer::choose_run_directory() {
  resume_from_ = request_.resume;
  std::string reuse_dir;
  const bool restarted = placement_.env.restarted();
  if (resume_from_.empty() && auto_resume_enabled(x_.train.resume, restarted)) {
    AutoResumeChoice choice;
    if (main()) choice = find_auto_resume(x_.train, restarted);
    // Rank 0's choice, as "<run dir>\n<checkpoint>".
    const std::string shared =
        world_->from_main("auto_resume", choice.run_dir + "\n" + choice.checkpoint);
    const size_t cut = shared.find('\n');
    reuse_dir = shared.substr(0, cut);
    resume_from_ = shared.substr(cut + 1);
  }
  if (!resume_from_.empty()) {
    paths_ = report::run_paths(report::resume_run_dir(resume_from_));
    resume(resume_from_);
  } else if (main() && !reuse_dir.empty()) {
    // The previous attempt's directory, trained in afresh: its metrics.jsonl lines are of
    // iterations this attempt runs again.
    paths_ = report::run_paths(reuse_dir);
    ensure_writable_dir(paths_.weights_dir);
    report::truncate_metrics_jsonl(paths_.metrics_jsonl, 0, 0);
  } else if (main()) {
    paths_ = report::create_run_dir(x_.train.project, x_.train.name, x_.train.exist_ok);
  }
  // Only rank 0 writes the run directory; the others learn its name for their messages.
  paths_.dir = world_->from_main("run_dir", paths_.dir);
}

void Trainer::resume(const std::string& where) {
  const ckpt::Checkpoint c = resume_into(
      parts_, state_, where,
      {parts_.arch, world_->size(), state_.position.batches_per_epoch, &resolved_, request_.force});
  state_.world_size = world_->size();  // the checkpoint's may differ (an elastic resume)
  if (main()) ckpt::tidy_for_resume(paths_, c, x_.train.best_half);
}

// Rank 0 writes the run directory: train.log, args.yaml, metrics.jsonl, labels.jpg, results.csv.
void Trainer::open_run_directory() {
  const bool resuming = !resume_from_.empty();
  std::string metrics_jsonl;
  if (main()) {
    add_log_file(paths_.train_log);
    config::save_args_yaml(resolved_, paths_.args_yaml);
    if (request_.print_config)
      report_start(resolved_, spdlog::default_logger()->should_log(spdlog::level::debug));
    spdlog::info("run directory {}", paths_.dir);
    if (resuming)
      report::truncate_metrics_jsonl(paths_.metrics_jsonl, state_.position.epoch,
                                     state_.position.iter_in_epoch);
    metrics_jsonl = paths_.metrics_jsonl;
    if (x_.train.tensorboard) open_tensorboard(resuming);
    if (x_.train.plots && !resuming)
      report::save_labels_plot(data_.train_records.images, data_.dataset.names,
                               paths_.file("labels.jpg"));
    epoch_end_ =
        std::make_unique<EpochEnd>(resolved_, data_, parts_, paths_, resuming,
                                   state_.position.epoch, world_->size() == 1, tensorboard_.get());
  }
  report_ = std::make_unique<IterationReport>(x_, main(), metrics_jsonl, placement_.device,
                                              tensorboard_.get());
}

// Before results.csv is rewritten: a resume reads which epochs the previous process finished.
void Trainer::open_tensorboard(bool resuming) {
  tensorboard_ =
      std::make_unique<report::TensorBoardLog>(paths_.dir, state_.position.batches_per_epoch);
  const std::string yaml = config::dump_yaml(x_, false);
  if (resuming)
    tensorboard_->resume(state_.position.epoch, state_.position.iter_in_epoch, yaml,
                         paths_.metrics_jsonl, paths_.results_csv);
  else
    tensorboard_->start(yaml);
  spdlog::info("TensorBoard: watch with 'tensorboard --logdir {}' at http://localhost:6006/",
               std::filesystem::path(paths_.dir).parent_path().string());
}

EpochOutcome Trainer::train_epoch() {
  const int64_t epoch = state_.position.epoch, epochs = state_.epochs;
  const int64_t nb = state_.position.batches_per_epoch;
  const std::vector<std::string>& loss_names = parts_.criterion->names();
  parts_.criterion->set_epoch(epoch, epochs);
  parts_.train_loader->set_mosaic(data::mosaic_active(epoch, epochs, x_.augment.close_mosaic));
  if (main()) report_mosaic(x_, epoch, epochs);
  parts_.train_loader->start_epoch(epoch, state_.position.iter_in_epoch);
  parts_.model->train();
  report_->start_epoch(epoch, nb, loss_names);

  for (int64_t iter = state_.position.iter_in_epoch; iter < nb; ++iter) {
    const IterationInfo info{world_->rank(), epoch, iter, iterations_this_process_};
    const bool stop = (request_.stop && request_.stop->load()) ||
                      (request_.callbacks.should_stop && request_.callbacks.should_stop(info));
    const bool requeue = request_.requeue && request_.requeue->load();
    world_->set_progress(epoch * nb + iter, fmt::format("epoch {} iteration {}", epoch + 1, iter));
    // Ranks stop together (a signal may reach them at different iterations): one all-reduce
    // of both flags.
    const std::vector<bool> agreed = world_->any_of({stop, requeue}, "the stop check");
    if (agreed[0] || agreed[1]) {
      requeue_ = agreed[1];
      return EpochOutcome::stopped();
    }
    if (request_.callbacks.before_iteration) request_.callbacks.before_iteration(info);
    watch_load();

    Stopwatch step_clock;
    std::optional<data::Batch> batch = parts_.train_loader->next();
    if (!batch)
      throw DataError("the training loader ended after " + std::to_string(iter) + " of " +
                      std::to_string(nb) + " batches of epoch " + std::to_string(epoch + 1));
    // The first batches of a run (a run resumed past them already drew them).
    if (epoch == 0 && iter < x_.train.plot_batches && x_.train.plots && main() &&
        iterations_this_process_ == iter)
      report::save_train_batch_plot(*batch, data_.dataset,
                                    paths_.file("train_batch" + std::to_string(iter) + ".jpg"));
    const StepResult step = step_->run(*batch, epoch, iter, parts_.schedule->at(epoch, iter),
                                       state_.lr_scale, state_.position);
    if (step.problem) return EpochOutcome::diverged(*step.problem);
    state_.running.add(step.loss_items);
    state_.position.iter_in_epoch = iter + 1;
    ++iterations_this_process_;

    report_->add(iter, step, state_, *parts_.optimizer, batch->data_wait_ms, step_clock.millis());
    if (main() && x_.train.save_period_steps > 0 && step.optimizer_stepped &&
        state_.position.optimizer_steps % x_.train.save_period_steps == 0)
      ckpt::save_checkpoint(paths_.last_ckpt, checkpoint());
    // train.time: the reference checks after every optimizer step and ends the epoch there;
    // rank 0's clock decides for all.
    if (x_.train.time > 0 && step.optimizer_stepped &&
        world_->any(main() && training_seconds() > x_.train.time * 3600.0, "the time check")) {
      time_up_ = true;
      break;
    }
  }
  report_->finish_epoch();
  return EpochOutcome::completed();
}

// Rank 0 validates, records and saves; the other ranks wait for that (through the store, up
// to train.dist_timeout_s) so none races ahead into a collective.
EpochOutcome Trainer::finish_epoch(double seconds) {
  const std::string key = "epoch_done/" + std::to_string(state_.position.epoch);
  state_.train_seconds = training_seconds();
  // Rank 0's decision (go on, stop, how many epochs under train.time) travels as
  // "<epochs>\n<why it stops>".
  std::string decision;
  EpochOutcome outcome = EpochOutcome::completed();
  if (main()) {
    const EpochVerdict verdict = epoch_end_->finish(state_, seconds, time_up_);
    if (verdict.problem) outcome = EpochOutcome::diverged(*verdict.problem);
    decision = std::to_string(state_.epochs) + "\n" + verdict.stop;
    world_->from_main(key, decision);
    world_->notify(key);
  } else {
    world_->wait_for(key);
    decision = world_->from_main(key, "");
  }
  time_up_ = false;
  const size_t cut = decision.find('\n');
  const std::string stop = decision.substr(cut + 1);
  if (!main()) {
    state_.epochs = std::stoll(decision.substr(0, cut));
    state_.advance_epoch(!stop.empty());
  }
  if (!stop.empty() && !outcome.is(EpochOutcome::Kind::kDiverged)) stop_reason_ = stop;
  follow_epoch_count();
  return outcome;
}

void Trainer::watch_load() {
  if (!load_watch_) return;
  const auto change = load_watch_->poll(
      loop_clock_.seconds(), [] { return sample_machine_load(10, 10, /*exclude_own=*/true); });
  if (!change) return;
  if (threads_follow_load_) {
    compat::set_num_threads(change->busy ? threads_idle_cpus_hold(change->load, all_threads_)
                                         : all_threads_);
    spdlog::info("intra-op threads: now {} of {} ({})", compat::num_threads(), all_threads_,
                 change->reason);
    return;
  }
  // A thread count the user fixed: BF16 on busy cores was measured slower than fp32.
  const bool bf16 = !change->busy;
  precision_ = bf16 ? model::Precision::kBf16 : model::Precision::kFp32;
  step_->set_precision(precision_);
  if (parts_.validation) parts_.validation->set_bf16(bf16);  // rank 0's
  spdlog::info("train.precision=auto: now {} ({})", model::precision_name(precision_),
               change->reason);
}

void Trainer::follow_epoch_count() {
  optim::ScheduleSettings settings = parts_.schedule->settings();
  if (settings.epochs == state_.epochs) return;
  settings.epochs = state_.epochs;
  parts_.schedule = std::make_unique<optim::TrainSchedule>(
      settings, parts_.schedule->batches_per_epoch(), parts_.schedule_groups);
}

void Trainer::roll_back(const std::string& problem) {
  DivergencePolicy policy(x_.train.max_bad_steps, state_.position.bad_steps, state_.lr_scale);
  if (!policy.try_rollback())
    throw NumericError(
        diverged_message(problem, policy,
                         DivergenceContext::of_run(precision_ == model::Precision::kBf16,
                                                   x_.train.clip_grad_norm > 0, paths_.last_ckpt)));
  // The good state has no gradients of the bad step; a state without them starts clean.
  parts_.optimizer->zero_grad();
  rewind(parts_, state_, *good_state_);
  state_.position.bad_steps = policy.rollbacks();
  state_.lr_scale = policy.lr_scale();
  if (tensorboard_) tensorboard_->rewind(state_.position.epoch, state_.position.iter_in_epoch);
  spdlog::warn("{}", rollback_message(problem, policy, state_.position.epoch,
                                      state_.position.iter_in_epoch));
}

TrainSummary Trainer::run() {
  start_log_capture();  // train.log also gets what set-up says before the run directory exists
  build();
  choose_run_directory();
  // The epoch count: the config's, or under train.time the one the run had re-estimated.
  if (x_.train.time <= 0 || state_.epochs <= 0) state_.epochs = x_.train.epochs;
  follow_epoch_count();
  seconds_before_ = state_.train_seconds;
  open_run_directory();

  TrainSummary summary;
  summary.run_dir = paths_.dir;
  summary.main_rank = main();
  loop_clock_.reset();
  while (!state_.position.finished && state_.position.epoch < state_.epochs) {
    if (state_.position.iter_in_epoch == 0 || !good_state_) good_state_ = deep_copy(checkpoint());
    Stopwatch epoch_clock;
    const EpochOutcome trained = train_epoch();
    if (trained.is(EpochOutcome::Kind::kDiverged)) {
      roll_back(trained.problem);
      continue;
    }
    if (trained.is(EpochOutcome::Kind::kStopped)) {
      // Mid-accumulation gradients differ per rank; their mean continues the same sums.
      world_->average_gradients(parts_.trainable);
      state_.train_seconds = training_seconds();
      if (main()) ckpt::save_checkpoint(paths_.last_ckpt, checkpoint());
      world_->barrier("the stop checkpoint");
      summary.interrupted = true;
      summary.requeued = requeue_;
      if (requeue_)
        spdlog::warn(
            "{} (train.requeue_signal): stopped at epoch {} iteration {} with a checkpoint; the "
            "requeued job continues it (train.resume), or: detrain train --resume {}",
            x_.train.requeue_signal, state_.position.epoch + 1, state_.position.iter_in_epoch,
            paths_.dir);
      else
        spdlog::warn("stopped at epoch {} iteration {}; resume with: detrain train --resume {}",
                     state_.position.epoch + 1, state_.position.iter_in_epoch, paths_.dir);
      break;
    }
    const EpochOutcome ended = finish_epoch(epoch_clock.seconds());
    if (ended.is(EpochOutcome::Kind::kDiverged)) roll_back(ended.problem);
  }
  // Rank 0 hosts the store: nobody leaves while another may still reach it.
  world_->barrier("the end of training");
  if (const std::string overlap = world_->overlap_report(); main() && !overlap.empty())
    spdlog::info("{}", overlap);
  if (main()) log_skipped_images(data_, *parts_.train_loader);
  state_.summarize(summary);
  summary.stop_reason = stop_reason_;
  summary.total_s = run_clock_.seconds();
  if (epoch_end_) {
    summary.box_stats = epoch_end_->box_stats();
    summary.keypoint_stats = epoch_end_->keypoint_stats();
  }
  if (main() && !summary.interrupted) show(final_summary(summary));
  return summary;
}

TrainSummary run_training(const TrainRequest& request) {
  Trainer trainer(request);
  return trainer.run();
}

}  // namespace detrain::train
