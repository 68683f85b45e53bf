// An Experiment is every option section together: the frozen, resolved configuration that
// every entry point (train, val, predict, bench) receives.
#pragma once

#include <vector>

#include "config/augment_options.h"
#include "config/data_options.h"
#include "config/field.h"
#include "config/loss_options.h"
#include "config/model_options.h"
#include "config/optim_options.h"
#include "config/runtime_options.h"
#include "config/train_options.h"
#include "config/val_options.h"

namespace detrain::config {

struct Experiment {
  ModelOptions model;
  DataOptions data;
  AugmentOptions augment;
  TrainOptions train;
  OptimOptions optim;
  LossOptions loss;
  ValOptions val;
  RuntimeOptions runtime;

  // Sections in their canonical (printed, dumped, hashed) order.
  template <class V>
  void visit_sections(V& v) {
    v("model", model);
    v("data", data);
    v("augment", augment);
    v("train", train);
    v("optim", optim);
    v("loss", loss);
    v("val", val);
    v("runtime", runtime);
  }
};

// Every field of an experiment, in canonical order, pointing into `experiment`.
std::vector<FieldRef> fields_of(Experiment& experiment);

}  // namespace detrain::config
