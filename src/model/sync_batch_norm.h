// Synchronised BatchNorm (train.sync_bn): in training mode, the batch mean and variance of a
// BatchNorm2d are taken over the inputs of every data-parallel rank (one all-reduce of the
// per-rank statistics), and the backward pass sums the statistics' gradients over the ranks, so
// N ranks of batch b normalise exactly like one process of batch N*b. Like PyTorch's
// SyncBatchNorm, the running variance uses the unbiased global variance; unlike it, the
// per-rank statistics are gathered and combined in one all-reduce (each rank's mean and
// squared deviations, Chan's formula) instead of an all-gather plus a reduction kernel.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "common/replicas.h"

namespace detrain::model {

// y = BN(x) with global batch statistics; updates bn's running buffers. x: [B, C, H, W].
torch::Tensor sync_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm2dImpl& bn,
                              const Replicas& replicas);

// Makes every Conv's BatchNorm under `root` synchronise over `replicas` in training mode
// (null: back to local statistics). `replicas` must outlive the training steps.
void set_sync_batch_norm(torch::nn::Module& root, std::shared_ptr<const Replicas> replicas);

}  // namespace detrain::model
