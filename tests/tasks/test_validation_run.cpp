// ValidationRun: validation losses (the criterion's items on each val batch, eval-mode raw head
// outputs and the batch's targets, averaged over batches, checked against direct criterion
// calls on the same batches; the pose head's RLE item is 0 there, as in the reference); rect
// batch shapes equal to Ultralytics 8.4.190's set_rectangle (run at test time); images that are
// not whole dropped from the ground truth and the predictions alike, warned about on every run;
// the keypoint area rule printed under the table.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "common/paths.h"
#include "config/config.h"
#include "data/coco_records.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/pipeline.h"
#include "data/synth.h"
#include "export/export_fixtures.h"
#include "log_capture.h"
#include "loss/criterion.h"
#include "model/yolo_model.h"
#include "tasks/validation_run.h"
#include "test_support.h"
#include "train/train_fixtures.h"

using namespace detrain;
using detrain::test::TempDir;
using detrain::test::tiny_synth;

namespace {

// The items averaged over the val batches, each computed by a direct criterion call on the
// eval-mode forward of the same loader batch.
std::vector<double> direct_val_losses(const config::Experiment& x, const data::DatasetInfo& dataset,
                                      model::YoloModelImpl& model,
                                      const loss::Criterion& criterion) {
  const auto records =
      data::load_records(dataset, "val", data::RecordOptions::from(x.data, false)).images;
  data::LoaderOptions lo =
      data::LoaderOptions::from(x.data, static_cast<uint64_t>(x.runtime.seed), /*train=*/false);
  lo.batch = x.val.batch;
  lo.stride = static_cast<int>(model.max_stride());
  data::Loader loader(dataset, records, x.augment, lo);
  loader.start_epoch(0, 0);
  torch::NoGradGuard no_grad;
  model.eval();
  torch::Tensor sum;  // [n] float64
  int64_t batches = 0;
  while (std::optional<data::Batch> b = loader.next()) {
    const torch::Tensor images = b->images.to(torch::kFloat).div(255.0);  // [B, 3, H, W]
    const model::EvalOutput out = model.forward_eval(images);
    const loss::LossResult l =
        criterion(out.raw, tasks::loss_targets(*b, torch::kCPU), {images.size(2), images.size(3)});
    const torch::Tensor items = l.items.to(torch::kDouble);
    sum = sum.defined() ? sum + items : items;
    ++batches;
  }
  REQUIRE(batches == 2);
  std::vector<double> means;
  for (int64_t i = 0; i < sum.size(0); ++i) means.push_back(sum[i].item<double>() / batches);
  return means;
}

struct Setup {
  config::ResolvedConfig resolved;
  data::DatasetInfo dataset;
  model::YoloModel model{nullptr};
  std::unique_ptr<loss::Criterion> criterion;
};

Setup make_setup(const std::string& dataset_yaml, const std::string& arch) {
  Setup s{config::resolve("", {"data.dataset=" + dataset_yaml, "data.imgsz=64", "data.workers=0",
                               "val.batch=4", "model.arch=" + arch, "runtime.seed=2"}),
          {},
          nullptr,
          nullptr};
  const config::Experiment& x = s.resolved.experiment;
  s.dataset = data::load_dataset(x.data.dataset, x.data.root);
  std::optional<std::array<int64_t, 2>> kpt_shape;
  if (s.dataset.has_keypoints())
    kpt_shape = std::array<int64_t, 2>{s.dataset.kpt_count, s.dataset.kpt_dims};
  torch::manual_seed(2);
  s.model = model::make_model(x.model, s.dataset.nc(), kpt_shape);
  s.criterion = loss::make_criterion(s.model->head()->options(), x.loss, s.dataset.oks_sigmas,
                                     s.model->head()->flow());
  return s;
}

void check_matches_direct(Setup& s) {
  const config::Experiment& x = s.resolved.experiment;
  tasks::ValidationRun run(x, s.dataset, "val", *s.model, torch::kCPU, /*bf16=*/false);
  const infer::ValidationResult r = run.run(*s.model, {}, s.criterion.get());
  const std::vector<double> direct = direct_val_losses(x, s.dataset, *s.model, *s.criterion);
  REQUIRE(r.losses.size() == s.criterion->names().size());
  for (size_t i = 0; i < r.losses.size(); ++i) {
    INFO(s.criterion->names()[i] << ": validation " << r.losses[i] << ", direct " << direct[i]);
    CHECK(std::isfinite(r.losses[i]));
    // The same operations on the same batches in one process (fp32): bit-identical.
    CHECK(r.losses[i] == direct[i]);
  }
  // Without a criterion nothing is computed.
  CHECK(run.run(*s.model).losses.empty());
}

}  // namespace

TEST_CASE("validation losses are the batch mean of direct criterion calls (detect)",
          "[unit][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  Setup s = make_setup(synth.detect_yaml, "models/yolo26.yaml");
  check_matches_direct(s);
}

TEST_CASE("validation losses of a pose model match direct calls and have RLE 0", "[unit][train]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  Setup s = make_setup(synth.pose_yaml, "models/yolo26-pose.yaml");
  check_matches_direct(s);
  tasks::ValidationRun run(s.resolved.experiment, s.dataset, "val", *s.model, torch::kCPU, false);
  const infer::ValidationResult r = run.run(*s.model, {}, s.criterion.get());
  const auto& names = s.criterion->names();
  const auto rle = std::find(names.begin(), names.end(), "rle");
  REQUIRE(rle != names.end());
  // The eval graph skips the sigma heads, so the RLE term has nothing to score (reference
  // section 3.4: "val rle is 0").
  CHECK(r.losses[static_cast<size_t>(rle - names.begin())] == 0.0);
  CHECK(r.losses[0] > 0.0);  // box
}

namespace {

// Per image (in `sizes` order, w x h), the input shape "HxW" of its rect batch: detrain's plan
// and 8.4.190's BaseDataset.set_rectangle (tests/infer/yolo_val_reference.py rect).
std::string shape_text(int h, int w) { return std::to_string(h) + "x" + std::to_string(w); }

std::vector<std::string> detrain_shapes(const std::vector<std::array<int, 2>>& sizes, int64_t batch,
                                        int imgsz) {
  std::vector<data::ImageRecord> records(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    records[i].width = sizes[i][0];
    records[i].height = sizes[i][1];
  }
  const data::RectBatches plan = data::plan_rect_batches(records, batch, imgsz);
  std::vector<std::string> out(sizes.size());
  for (size_t pos = 0; pos < plan.order.size(); ++pos) {
    const auto& hw = plan.shapes_hw[pos / static_cast<size_t>(batch)];
    out[static_cast<size_t>(plan.order[pos])] = shape_text(hw[0], hw[1]);
  }
  return out;
}

std::vector<std::string> reference_shapes(const std::vector<std::array<int, 2>>& sizes,
                                          int64_t batch, int imgsz) {
  std::string list;
  for (const auto& s : sizes)
    list += (list.empty() ? "" : ",") + std::to_string(s[0]) + "x" + std::to_string(s[1]);
  const auto r = test::run_command("'" + test::reference_python() + "' '" + source_dir() +
                                   "/tests/infer/yolo_val_reference.py' rect --sizes " + list +
                                   " --batch " + std::to_string(batch) + " --imgsz " +
                                   std::to_string(imgsz) + " 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  for (const auto& s : nlohmann::json::parse(r.output)) out.push_back(shape_text(s[0], s[1]));
  return out;
}

// Occurrences of `needle` in `text`.
size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("rect batch shapes are 8.4.190's set_rectangle shapes", "[parity][data][val]") {
  // COCO's common sizes and extremes; equal aspect ratios (0.75, 1.0) share a batch or meet at
  // a boundary between batches of one shape, where numpy's unstable argsort and the stable sort
  // here may order them differently without changing any image's shape.
  const std::vector<std::array<int, 2>> sizes = {
      {640, 480}, {480, 640}, {640, 427}, {640, 640},  {500, 375},  {612, 612}, {640, 360},
      {333, 500}, {640, 425}, {427, 640}, {1000, 200}, {200, 1000}, {640, 481}};
  for (const auto& [batch, imgsz] :
       std::vector<std::pair<int64_t, int>>{{4, 640}, {3, 320}, {16, 640}, {2, 416}}) {
    INFO("batch " << batch << ", imgsz " << imgsz);
    CHECK(detrain_shapes(sizes, batch, imgsz) == reference_shapes(sizes, batch, imgsz));
  }
  // Half a stride of padding: a 640 x 480 image alone is validated at 512 x 672, not 480 x 640.
  CHECK(detrain_shapes({{640, 480}}, 1, 640)[0] == "512x672");
}

TEST_CASE("validation drops broken images from ground truth and predictions, warning every run",
          "[unit][val]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  Setup s = make_setup(synth.detect_yaml, "models/yolo26.yaml");
  const config::Experiment& x = s.resolved.experiment;
  REQUIRE(x.data.cache_records);  // the second run reads the image check from its cache
  const auto all = data::load_records(s.dataset, "val").images;
  REQUIRE(all.size() == 8);
  {
    std::ifstream in(all[1].file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream out(all[1].file, std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, bytes.size() / 2);  // truncated JPEG, header intact
  }
  test::write_text(all[2].file, "garbage, not an image");
  std::set<int64_t> kept;
  for (size_t i = 0; i < all.size(); ++i)
    if (i != 1 && i != 2) kept.insert(all[i].image_id);

  for (int run_index = 0; run_index < 2; ++run_index) {
    INFO("run " << run_index);
    std::ostringstream log;
    std::optional<tasks::ValidationRun> run;
    {
      test::LogCapture capture(log);
      run.emplace(x, s.dataset, "val", *s.model, torch::kCPU, false);
    }
    INFO(log.str());
    CHECK(count_of(log.str(), all[1].file + ": truncated or damaged JPEG") == 1);
    CHECK(count_of(log.str(), all[2].file + ": cannot be read as an image") == 1);
    CHECK(run->images() == 6);
    const infer::ValidationResult r = run->run(*s.model);
    CHECK(r.images == 6);
    // The ground truth scored is the kept images' alone.
    CHECK(std::set<int64_t>(r.box.image_ids.begin(), r.box.image_ids.end()) == kept);
    // Predictions only for kept images, and no image's predictions under another's id too (a
    // replaced image used to be predicted twice: its neighbour's list, under its own id).
    std::map<int64_t, std::vector<std::tuple<int64_t, double, double, double, double, double>>>
        per_image;
    for (const auto& p : r.records) {
      CHECK(kept.count(p.image_id) == 1);
      per_image[p.image_id].emplace_back(p.category_id, p.score, p.bbox[0], p.bbox[1], p.bbox[2],
                                         p.bbox[3]);
    }
    for (auto a = per_image.begin(); a != per_image.end(); ++a)
      for (auto b = std::next(a); b != per_image.end(); ++b) {
        INFO("images " << a->first << " and " << b->first);
        const bool same_predictions = a->second == b->second;
        CHECK_FALSE(same_predictions);
      }
  }
}

TEST_CASE("the keypoint OKS area rule is printed under a pose table", "[unit][val]") {
  TempDir dir;
  const auto synth = tiny_synth(dir, 5, 4, 8);
  const data::DatasetInfo coco = data::load_dataset(synth.pose_yaml);
  CHECK(tasks::keypoint_area_rule(coco) ==
        "keypoint OKS area: each annotation's own area (COCO: its segment's)");
  data::DatasetInfo yolo = coco;
  yolo.format = data::DataFormat::kYolo;
  CHECK(tasks::keypoint_area_rule(yolo).rfind("keypoint OKS area: 0.53 x box w*h", 0) == 0);

  infer::ValidationResult r;
  r.box.stats.assign(12, 0.5);
  CHECK(infer::stats_table(r).find("OKS area") == std::string::npos);  // detection: no line
  r.keypoints.emplace();
  r.keypoints->stats.assign(10, 0.25);
  r.keypoint_area_rule = tasks::keypoint_area_rule(yolo);
  const std::string table = infer::stats_table(r);
  INFO(table);
  // The last line of the table names the rule.
  CHECK(table.find("keypoints") < table.find("keypoint OKS area: 0.53 x box w*h"));
  CHECK(count_of(table, "keypoint OKS area") == 1);
}
