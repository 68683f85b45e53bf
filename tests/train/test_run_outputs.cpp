// What a user finds after a run and does next: every plot file, a train.log that reads like
// the console, a small weights-only best.ckpt beside the resumable last.ckpt, fine-tuning from
// a checkpoint, a run directory or safetensors with model.weights (other class counts: all but
// the class heads; other architectures refused naming both), and predict that never overwrites
// (drawn images, labels, predictions.json).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <sstream>

#include "ckpt/checkpoint.h"
#include "ckpt/initial_weights.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "config/config.h"
#include "export/weights_export.h"
#include "log_capture.h"
#include "model/state_dict.h"
#include "model/yolo_model.h"
#include "report/run_dir.h"
#include "test_support.h"
#include "train/train_fixtures.h"
#include "train/trainer.h"

using namespace detrain;
using namespace detrain::train;
using namespace detrain::ckpt;
using namespace detrain::report;
using detrain::test::run_detrain;
using detrain::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> run_overrides(const TempDir& dir, const std::string& dataset,
                                       const std::string& name) {
  return {"data.dataset=" + dataset,
          "data.imgsz=64",
          "data.batch=4",
          "data.workers=2",
          "train.epochs=2",
          "train.warmup_epochs=0",
          "train.nbs=4",
          "train.precision=fp32",
          "train.progress=plain",
          "train.project=" + dir.file("runs"),
          "train.name=" + name,
          "runtime.threads=1",
          "runtime.seed=3",
          "val.conf=0.0"};
}

TrainSummary train_with(const std::vector<std::string>& overrides) {
  TrainRequest r;
  r.config = config::resolve("", overrides);
  return run_training(r);
}

model::YoloModel model_for(int64_t nc) {
  config::ModelOptions o = config::resolve("", {}).experiment.model;
  return model::make_model(o, nc, std::nullopt);
}

}  // namespace

TEST_CASE("a run writes every plot and a readable train.log and a small best.ckpt",
          "[smoke][train][ux]") {
  TempDir dir;
  const auto synth = detrain::test::tiny_synth(dir);
  const TrainSummary s = train_with(run_overrides(dir, synth.detect_yaml, "plots"));
  const RunPaths p = run_paths(s.run_dir);
  for (const char* name :
       {"labels.jpg", "results.png", "confusion_matrix.png", "confusion_matrix_normalized.png",
        "BoxPR_curve.png", "BoxF1_curve.png", "BoxP_curve.png", "BoxR_curve.png",
        "val_batch0_labels.jpg", "val_batch0_pred.jpg", "train_batch0.jpg"}) {
    INFO(name);
    const cv::Mat img = cv::imread(p.file(name));
    // Charts have a fixed size; batch mosaics scale with data.imgsz (64 here).
    const int least = std::string(name).find("batch") != std::string::npos ? 64 : 300;
    CHECK(img.cols >= least);
    CHECK(img.rows >= least);
  }
  CHECK_FALSE(fs::exists(p.file("PosePR_curve.png")));  // detection only

  const std::string log = read_file(p.train_log);
  // The config table (non-defaults), the warning, each epoch's line, each validation table and
  // the final summary with total time and both checkpoints.
  CHECK_THAT(log, Catch::Contains("keys differ from the defaults") &&
                      Catch::Contains("data.imgsz") && !Catch::Contains("augment.hsv_h"));
  CHECK_THAT(log, Catch::Contains("augment.close_mosaic=10 >= train.epochs=2"));
  CHECK_THAT(log, Catch::Contains("Epoch") && Catch::Contains("1/2") && Catch::Contains("2/2"));
  CHECK_THAT(log, Catch::Contains("COCO") && Catch::Contains("AP50"));
  // Validation progress in plain form, before each validation table.
  const auto validated = log.find(" images in ");
  CHECK(log.find("validated ") != std::string::npos);
  CHECK(validated < log.find("AP50"));
  CHECK(log.find('\r') == std::string::npos);
  CHECK_THAT(log, Catch::Contains("2 epochs (") && Catch::Contains(p.best_ckpt) &&
                      Catch::Contains("last (resumable): " + p.last_ckpt));

  const Checkpoint last = load_checkpoint(p.last_ckpt), best = load_checkpoint(p.best_ckpt);
  CHECK(best.model.empty());
  CHECK(best.optimizer.tensors.empty());
  REQUIRE(best.ema.size() == last.ema.size());
  CHECK(best.ema.front().second.scalar_type() == torch::kHalf);
  CHECK(fs::file_size(p.best_ckpt) * 3 < fs::file_size(p.last_ckpt));
  TrainRequest from_best;
  from_best.config = config::resolve("", run_overrides(dir, synth.detect_yaml, "plots"));
  from_best.resume = p.best_ckpt;
  CHECK_THROWS_WITH(run_training(from_best), Catch::Contains("resume from the run's"));

  // `detrain val --plots` draws the same set into its folder.
  const auto val = run_detrain("val -w '" + p.best_ckpt + "' --plots -o '" + dir.file("val") + "'");
  INFO(val.output);
  REQUIRE(val.exit_code == 0);
  CHECK(fs::exists(dir.file("val/confusion_matrix.png")));
  CHECK(fs::exists(dir.file("val/BoxF1_curve.png")));
  CHECK(fs::exists(dir.file("val/val_batch0_labels.jpg")));
}

TEST_CASE("model.weights starts a new run from a checkpoint or a run directory",
          "[smoke][train][ux]") {
  TempDir dir;
  const auto synth = detrain::test::tiny_synth(dir);
  auto first = run_overrides(dir, synth.detect_yaml, "first");
  first.push_back("train.epochs=1");
  first.push_back("train.plots=false");
  const TrainSummary a = train_with(first);
  const RunPaths p = run_paths(a.run_dir);
  const Checkpoint last = load_checkpoint(p.last_ckpt);

  // The EMA weights land in the model, by name.
  model::YoloModel m = model_for(last.arch.nc);
  ArchIdentity id = last.arch;
  const InitialWeightsReport r = load_initial_weights(*m, id, p.last_ckpt);
  CHECK(r.fresh == 0);
  const std::map<std::string, torch::Tensor> ema(last.ema.begin(), last.ema.end());
  for (const auto& [name, t] : model::state_dict(*m)) {
    INFO(name);
    CHECK(torch::equal(t, ema.at(name)));
  }
  CHECK(initial_weights_file(a.run_dir) == p.best_ckpt);

  // Another class count: everything but the class heads, which keep their initialisation.
  model::YoloModel other = model_for(last.arch.nc + 2);
  ArchIdentity other_id = last.arch;
  other_id.nc = last.arch.nc + 2;
  const InitialWeightsReport partial = load_initial_weights(*other, other_id, p.last_ckpt);
  CHECK(partial.fresh > 0);
  CHECK(partial.fresh <= 12);  // the last class conv (weight, bias) of 3 levels, 2 branches
  CHECK(partial.loaded + partial.fresh == model::state_dict(*other).size());

  // Another scale: refused, naming both.
  ArchIdentity small = last.arch;
  small.scale = "s";
  CHECK_THROWS_WITH(load_initial_weights(*m, small, p.last_ckpt),
                    Catch::Contains("scale n") && Catch::Contains("scale s"));
  CHECK_THROWS_AS(load_initial_weights(*m, id, dir.file("nope.ckpt")), IoError);

  // A finished run's last.ckpt (or its directory) starts a new run.
  auto second = run_overrides(dir, synth.detect_yaml, "second");
  second.push_back("train.epochs=1");
  second.push_back("train.plots=false");
  second.push_back("model.weights=" + p.last_ckpt);
  // Learning rate 0: the convolutions keep the weights they started from.
  for (const char* k : {"optim.optimizer=sgd", "optim.lr0=0", "optim.weight_decay=0"})
    second.push_back(k);
  const TrainSummary b = train_with(second);
  CHECK(b.epochs_completed == 1);
  // Said during setup, before the run directory existed, and still in train.log.
  CHECK_THAT(read_file(run_paths(b.run_dir).train_log),
             Catch::Contains("model.weights: EMA weights of " + p.last_ckpt));
  const Checkpoint started = load_checkpoint(run_paths(b.run_dir).last_ckpt);
  size_t compared = 0;
  for (const auto& [name, t] : started.model)
    if (name.size() > 11 && name.compare(name.size() - 11, 11, "conv.weight") == 0) {
      INFO(name);
      CHECK(torch::equal(t, ema.at(name)));
      ++compared;
    }
  CHECK(compared > 50);
}

TEST_CASE("model.weights takes safetensors of another class count, but not of another network",
          "[train][ux]") {
  TempDir dir;
  torch::manual_seed(11);
  model::YoloModel source = model_for(80);
  const std::string file = dir.file("w80.safetensors");
  exporter::export_safetensors(*source, file);
  const std::map<std::string, torch::Tensor> saved = [&] {
    const auto state = model::state_dict(*source);
    return std::map<std::string, torch::Tensor>(state.begin(), state.end());
  }();

  // Another class count: every tensor but the class heads', said in one warning line.
  torch::manual_seed(12);
  model::YoloModel target = model_for(3);
  std::map<std::string, torch::Tensor> init;
  for (const auto& [name, t] : model::state_dict(*target)) init[name] = t.clone();
  ArchIdentity id;
  id.arch_file = target->arch().path;
  id.scale = "n";
  id.nc = 3;
  std::ostringstream log;
  InitialWeightsReport r;
  {
    test::LogCapture capture(log);
    r = load_initial_weights(*target, id, file);
  }
  // yolo26n: the class branch (cv3 and one2one_cv3 of 3 levels) is 80 wide for 80 classes and
  // 64 for 3: those tensors keep their initialisation; every other one is the file's.
  CHECK(r.fresh > 12);
  CHECK(r.loaded + r.fresh == init.size());
  size_t fresh = 0;
  for (const auto& [name, t] : model::state_dict(*target)) {
    INFO(name);
    if (t.sizes() == saved.at(name).sizes()) {
      CHECK(torch::equal(t, saved.at(name)));
    } else {
      CHECK(torch::equal(t, init.at(name)));  // left at its initialisation
      CHECK(name.find("cv3.") != std::string::npos);
      ++fresh;
    }
  }
  CHECK(fresh == r.fresh);
  const std::string said = log.str();
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  CHECK_THAT(said, Catch::Contains(file + " is for 80 classes, this run has 3: transferred " +
                                   std::to_string(r.loaded) + "/" + std::to_string(init.size()) +
                                   " tensors, skipped " + std::to_string(r.fresh) +
                                   " class-head tensors"));

  // The same class count: everything, strictly.
  model::YoloModel same = model_for(80);
  ArchIdentity id80 = id;
  id80.nc = 80;
  const InitialWeightsReport all = load_initial_weights(*same, id80, file);
  CHECK(all.fresh == 0);
  CHECK(all.loaded == init.size());

  // Another architecture (yolo11n into yolo26n): refused, naming both.
  config::ModelOptions o11 = config::resolve("", {}).experiment.model;
  o11.arch = "models/yolo11.yaml";
  model::YoloModel y11 = model::make_model(o11, 80, std::nullopt);
  const std::string other = dir.file("y11.safetensors");
  exporter::export_safetensors(*y11, other);
  CHECK_THROWS_AS(load_initial_weights(*same, id80, other), ModelError);
  CHECK_THROWS_WITH(load_initial_weights(*same, id80, other),
                    Catch::Contains("yolo11n weights (80 classes") &&
                        Catch::Contains("is not for " + id80.describe()) &&
                        Catch::Contains("missing"));
  // A different class count and another network together is still another network.
  CHECK_THROWS_AS(load_initial_weights(*target, id, other), ModelError);
}

TEST_CASE("predict keeps every input's name and extension and never overwrites",
          "[smoke][train][ux]") {
  TempDir dir;
  const auto synth = detrain::test::tiny_synth(dir);
  auto o = run_overrides(dir, synth.detect_yaml, "pred");
  o.push_back("train.epochs=1");
  o.push_back("train.plots=false");
  const TrainSummary s = train_with(o);
  const std::string weights = run_paths(s.run_dir).best_ckpt;

  fs::create_directories(dir.file("in/sub"));
  const std::string val_dir = synth.root + "/images/val";
  std::vector<fs::path> val_images;
  for (const auto& e : fs::directory_iterator(val_dir)) val_images.push_back(e.path());
  std::sort(val_images.begin(), val_images.end());
  const cv::Mat image = cv::imread(val_images.front().string());
  cv::imwrite(dir.file("in/a.jpg"), image);
  cv::imwrite(dir.file("in/a.png"), image);
  cv::imwrite(dir.file("in/sub/b.jpg"), image);

  const std::string cmd = "predict -w '" + weights + "' -s '" + dir.file("in") + "' -o '" +
                          dir.file("out") + "' --conf 0.0 --max-det 5 --save-txt";
  const auto r = run_detrain(cmd);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("a.jpg: 5 detections") && Catch::Contains("a.png: 5"));
  CHECK(cv::imread(dir.file("out/a.jpg")).cols == image.cols);
  CHECK(cv::imread(dir.file("out/a.png")).cols == image.cols);
  CHECK_FALSE(fs::exists(dir.file("out/sub/b.jpg")));  // not --recursive
  // YOLO txt: class cx cy w h normalised, one line per detection.
  const std::string txt = read_file(dir.file("out/labels/a.txt"));
  CHECK(std::count(txt.begin(), txt.end(), '\n') == 5);
  CHECK(fs::exists(dir.file("out/labels/a_2.txt")));
  CHECK_THAT(r.output, Catch::Contains("COCO results " + dir.file("out/predictions.json") +
                                       " (image list " + dir.file("out/images.json") + ")"));
  const std::string first_predictions = read_file(dir.file("out/predictions.json"));

  // Again into the same folder, recursive, quiet, no drawing: new names, nothing overwritten.
  const auto again = run_detrain("-q " + cmd + " --recursive --no-draw");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.output, !Catch::Contains("detections, "));  // -q: no line per image
  CHECK(fs::exists(dir.file("out/labels/a_3.txt")));
  CHECK(fs::exists(dir.file("out/labels/sub/b.txt")));
  CHECK_FALSE(fs::exists(dir.file("out/sub/b.jpg")));
  // The first run's COCO results stay; this run's pair takes the next free suffix, and is said.
  CHECK(read_file(dir.file("out/predictions.json")) == first_predictions);
  const auto ids = nlohmann::json::parse(read_file(dir.file("out/images_2.json")));
  CHECK(ids.size() == 3);  // a.jpg, a.png, sub/b.jpg: the recursive run's own list
  CHECK(nlohmann::json::parse(read_file(dir.file("out/predictions_2.json"))).size() == 15);
  CHECK_THAT(again.output, Catch::Contains("COCO results " + dir.file("out/predictions_2.json") +
                                           " (image list " + dir.file("out/images_2.json") + ")"));
  // A third run, and a stray images_3.json: both files move on to _4 together.
  write_file_atomic(dir.file("out/images_3.json"), "[]\n");
  REQUIRE(run_detrain("-q " + cmd + " --no-draw").exit_code == 0);
  CHECK(fs::exists(dir.file("out/predictions_4.json")));
  CHECK(fs::exists(dir.file("out/images_4.json")));
  CHECK_FALSE(fs::exists(dir.file("out/predictions_3.json")));
  CHECK(read_file(dir.file("out/images_3.json")) == "[]\n");

  // A run directory as weights: its best.ckpt.
  const auto glob = run_detrain("predict -w '" + s.run_dir + "' -s '" + dir.file("in") +
                                "/*.png' -o '" + dir.file("glob") + "'");
  INFO(glob.output);
  REQUIRE(glob.exit_code == 0);
  CHECK_THAT(glob.output, Catch::Contains("on 1 images"));

  write_file_atomic(dir.file("clip.mp4"), "not really a video");
  const auto video =
      run_detrain("predict -w '" + weights + "' -s '" + dir.file("clip.mp4") + "' -o x");
  CHECK(video.exit_code == static_cast<int>(ExitCode::kData));
  CHECK_THAT(video.output, Catch::Contains("video files are not supported"));
}
