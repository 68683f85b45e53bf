// `train.*`: the training loop, schedules, checkpoints and the run directory. Owned by
// src/train/.
#pragma once

#include "config/field.h"

namespace detrain::config {

struct TrainOptions {
  int64_t epochs = 100;
  double time = 0.0;
  std::string project = "runs";
  std::string name = "train";
  bool exist_ok = false;
  int64_t nbs = 64;
  double warmup_epochs = 3.0;
  double warmup_momentum = 0.8;
  double warmup_bias_lr = 0.1;
  double lrf = 0.01;
  bool cos_lr = false;
  double clip_grad_norm = 10.0;
  double ema_decay = 0.9999;
  double ema_tau = 2000.0;
  std::string precision = "auto";
  int64_t max_bad_steps = 10;
  int64_t save_period_steps = 0;
  int64_t save_period = 0;
  bool best_half = true;
  int64_t patience = 100;
  bool val = true;
  bool plots = true;
  bool tensorboard = true;
  bool sync_bn = false;
  double dist_timeout_s = 1800.0;
  double dist_bucket_mb = 25.0;
  std::string dist_grad_compression = "none";
  bool dist_verify = false;
  std::string resume = "restarts";
  std::string requeue_signal = "SIGUSR1";
  std::vector<int64_t> freeze;
  std::string progress = "auto";
  double progress_interval_s = 30.0;
  int64_t log_every = 10;
  int64_t plot_batches = 3;

  template <class V>
  void visit(V& v) {
    v("epochs", epochs, "training epochs", Constraint::range(1, 1000000));
    v("time", time,
      "train for at most this many hours (0: off); the epoch count is re-estimated from the "
      "mean epoch time after every epoch, so it overrides epochs",
      Constraint::range(0, 1e5));
    v("project", project, "parent directory of run directories");
    v("name", name, "run directory name (runs/<name>, numbered when it exists)");
    v("exist_ok", exist_ok, "reuse runs/<name> instead of numbering a new one");
    v("nbs", nbs, "nominal batch size: gradients accumulate to this many images",
      Constraint::range(1, 65536));
    v("warmup_epochs", warmup_epochs, "warmup length in epochs (capped at epochs - 1)",
      Constraint::range(0, 1000));
    v("warmup_momentum", warmup_momentum, "momentum at the start of warmup",
      Constraint::range(0, 1));
    v("warmup_bias_lr", warmup_bias_lr, "bias learning rate at the start of warmup",
      Constraint::range(0, 10));
    v("lrf", lrf, "final learning rate as a fraction of lr0", Constraint::range(0, 1));
    v("cos_lr", cos_lr, "cosine instead of linear learning-rate decay");
    v("clip_grad_norm", clip_grad_norm, "gradient-norm clipping threshold (0 disables)",
      Constraint::range(0, 1e6));
    v("ema_decay", ema_decay, "EMA decay (ramped by 1 - exp(-updates/ema_tau))",
      Constraint::range(0, 1));
    v("ema_tau", ema_tau, "EMA ramp length in optimizer updates", Constraint::range(1, 1e9));
    v("precision", precision,
      "auto (bf16 autocast where it was measured faster: CUDA, and CPUs with AVX2 or better that "
      "are not busy with other work at start; else fp32), bf16 (fp32 on a CPU without fast bf16 "
      "convolutions), bf16-always (bf16 even there, for measurements) or fp32",
      Constraint::one_of({"auto", "bf16", "bf16-always", "fp32"}));
    v("max_bad_steps", max_bad_steps,
      "on divergence (non-finite or collapsed loss) roll back and halve the learning rate up to "
      "this many times, then stop",
      Constraint::range(0, 1000000));
    v("save_period_steps", save_period_steps, "also save last every N optimizer steps (0: off)",
      Constraint::range(0, 1e12));
    v("save_period", save_period, "also keep weights/epochN.ckpt after every N-th epoch (0: off)",
      Constraint::range(0, 1e6));
    v("best_half", best_half,
      "best.ckpt holds the EMA weights in fp16 (half the size; false: fp32)");
    v("patience", patience,
      "stop after N epochs without fitness improvement (0: never); needs train.val",
      Constraint::range(0, 1000000));
    v("val", val, "validate after every epoch");
    v("plots", plots, "draw results.png, train_batch*.jpg and val_pred*.jpg");
    v("tensorboard", tensorboard,
      "write TensorBoard event files into the run directory (tensorboard --logdir runs)");
    v("sync_bn", sync_bn, "synchronise BatchNorm statistics across ranks");
    v("dist_timeout_s", dist_timeout_s,
      "seconds a rank waits in a collective (or for rank 0's validation) before failing",
      Constraint::range(1, 86400));
    v("dist_bucket_mb", dist_bucket_mb,
      "size cap of one gradient bucket, all-reduced as soon as backward has filled it",
      Constraint::range(0.01, 4096));
    v("dist_grad_compression", dist_grad_compression,
      "gradients on the wire: none (fp32), bf16 or fp16 (half the bytes; each bucket is "
      "divided by the rank count, rounded, summed and widened back)",
      Constraint::one_of({"none", "bf16", "fp16"}));
    v("dist_verify", dist_verify,
      "check after every optimizer step that all ranks hold bit-identical weights (debug)");
    v("resume", resume,
      "auto: continue the newest <project>/<name>* run from its last good checkpoint when it "
      "has one, else start a new run; restarts: auto under a torchrun restart or a Slurm "
      "requeue (TORCHELASTIC_RESTART_COUNT / SLURM_RESTART_COUNT > 0); off: always a new run",
      Constraint::one_of({"restarts", "auto", "off"}));
    v("requeue_signal", requeue_signal,
      "on this signal all ranks stop at the next iteration, save a checkpoint, rank 0 runs "
      "scontrol requeue $SLURM_JOB_ID (under Slurm), and the run exits with code 75",
      Constraint::one_of({"SIGUSR1", "SIGUSR2", "none"}));
    v("freeze", freeze, "layer indices (model.N) whose parameters are frozen, e.g. [0, 1, 2]",
      Constraint::range(0, 1000));
    v("progress", progress,
      "progress line: auto (live on a terminal, plain otherwise), live, plain or off",
      Constraint::one_of({"auto", "live", "plain", "off"}));
    v("progress_interval_s", progress_interval_s, "seconds between plain progress lines (logs, CI)",
      Constraint::range(0.1, 86400));
    v("log_every", log_every, "write a metrics.jsonl line every N iterations",
      Constraint::range(1, 1000000));
    v("plot_batches", plot_batches,
      "batches drawn as train_batch*.jpg (and val_pred*.jpg); 0 draws none",
      Constraint::range(0, 100));
  }
};

}  // namespace detrain::config
