// The two executables (docs/architecture.md, "Two executables"): `detrain` runs eval, config,
// data stats, --help and --version without mapping LibTorch or OpenCV, hands every other command to
// detrain-torch by exec (same pid, argv, exit code and signals), says so in one line when
// detrain-torch is missing, and both list the same commands. Also: a stop the user asked for
// exits 130 with a line that is not an error.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "data/image_bytes.h"
#include "test_support.h"

using namespace detrain::test;
namespace fs = std::filesystem;

namespace {

// run_detrain for another executable, with `env` (NAME=value ...) for it alone (test_support.h
// left as it is: every test includes it).
RunResult run_binary(const std::string& binary, const std::string& args,
                     const std::string& env = "") {
  RunResult result;
  FILE* pipe = ::popen((env + " '" + binary + "' " + args + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The front end's rule (apps/front/torch_handoff.h): detrain-torch is beside detrain.
std::string detrain_torch_binary() {
  return (fs::path(detrain_binary()).parent_path() / "detrain-torch").string();
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string line(const std::string& text, int index) {
  std::istringstream in(text);
  std::string l;
  for (int i = 0; i <= index; ++i) std::getline(in, l);
  return l;
}

// One image, one box, one detection on it: every AP of the summary is 1.
struct EvalFiles {
  std::string gt, dt;
};

EvalFiles perfect_eval(const TempDir& dir) {
  write_text(dir.file("gt.json"),
             R"({"images":[{"id":1,"width":100,"height":100}],"annotations":[{"id":1,)"
             R"("image_id":1,"category_id":1,"bbox":[10,10,30,30],"area":900,"iscrowd":0}],)"
             R"("categories":[{"id":1,"name":"thing"}]})");
  write_text(dir.file("dt.json"),
             R"([{"image_id":1,"category_id":1,"bbox":[10,10,30,30],"score":0.9}])");
  return {dir.file("gt.json"), dir.file("dt.json")};
}

// glibc's loader trace (LD_DEBUG=files) names every shared library a process loads, dlopen
// included, and follows the process through exec.
bool loads(const std::string& trace, const std::string& library) {
  return trace.find("file=" + library) != std::string::npos;
}

// The report `data stats -q` prints, without its timing line.
std::string stats_report(const std::string& output) {
  std::istringstream in(output);
  std::string report;
  for (std::string l; std::getline(in, l);)
    if (l.find("  read in ") != 0) report += l + "\n";
  return report;
}

}  // namespace

TEST_CASE("detrain data stats runs in the front end; what needs a decoder goes to detrain-torch",
          "[smoke][cli][front][data]") {
  TempDir dir;
  fs::create_directories(dir.file("images/train"));
  fs::create_directories(dir.file("labels/train"));
  // Noise, so that a JPEG's entropy-coded data is most of the file.
  const auto image = [&](const std::string& name, int w, int h, const std::string& label) {
    cv::Mat pixels(h, w, CV_8UC3);
    cv::randu(pixels, 0, 255);
    CHECK(cv::imwrite(dir.file("images/train/" + name), pixels));
    write_text(dir.file("labels/train/" + fs::path(name).stem().string() + ".txt"), label);
  };
  image("1.jpg", 64, 48, "0 0.5 0.5 0.25 0.25\n");
  image("2.png", 80, 40, "1 0.5 0.5 0.5 0.5\n0 0.2 0.2 0.1 0.1\n");
  write_text(
      dir.file("d.yaml"),
      "path: " + dir.path() + "\ntrain: images/train\nval: images/train\nnames: {0: a, 1: b}\n");
  const std::string args =
      "-q data stats --data " + dir.file("d.yaml") + " data.cache_records=false";

  // JPEG and PNG sizes come from their headers: no LibTorch, no OpenCV, and the report
  // detrain-torch prints.
  const auto front = run_binary(detrain_binary(), args, "LD_DEBUG=files");
  INFO(front.output);
  REQUIRE(front.exit_code == 0);
  CHECK(loads(front.output, "libspdlog"));
  CHECK_FALSE(loads(front.output, "libtorch"));
  CHECK_FALSE(loads(front.output, "libopencv"));
  const auto quiet_front = run_detrain(args), full = run_binary(detrain_torch_binary(), args);
  REQUIRE(full.exit_code == 0);
  CHECK_THAT(full.output, Catch::Contains("2 images, 0 backgrounds (no targets), 3 annotations"));
  CHECK(stats_report(quiet_front.output) == stats_report(full.output));

  // --check-images decodes: detrain-torch runs it and finds a JPEG damaged inside: cut short
  // but ending with an end-of-image marker, so its header (the size) and its tail are whole and
  // the scan keeps it (a JPEG cut short without the marker is dropped at scan time:
  // tests/data/test_yolo_split.cpp).
  const std::string jpeg = dir.file("images/train/1.jpg");
  const auto bytes = fs::file_size(jpeg);
  fs::resize_file(jpeg, bytes * 3 / 4);
  std::ofstream(jpeg, std::ios::binary | std::ios::app) << "\xFF\xD9";
  const auto checked = run_binary(detrain_binary(), args + " --check-images", "LD_DEBUG=files");
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  CHECK(loads(checked.output, "libtorch_cpu"));
  CHECK_THAT(checked.output,
             Catch::Contains(", 1 corrupt images") && Catch::Contains("corrupt: " + jpeg));
  CHECK_THAT(run_detrain(args).output, Catch::Contains("images not decoded (--check-images"));

  // An image only a decoder can size hands the whole command on, before anything is printed, so
  // the report is detrain-torch's, once: a WebP turned a quarter by its EXIF orientation, which
  // the reference decodes too (data/image_size.h).
  if (!cv::haveImageWriter(dir.file("x.webp"))) return;
  image("1.jpg", 64, 48, "0 0.5 0.5 0.25 0.25\n");
  std::vector<uchar> webp;
  cv::Mat pixels(30, 50, CV_8UC3);
  cv::randu(pixels, 0, 255);
  REQUIRE(cv::imencode(".webp", pixels, webp, {cv::IMWRITE_WEBP_QUALITY, 90}));
  {
    std::ofstream out(dir.file("images/train/3.webp"), std::ios::binary);
    out << webp_with_orientation(std::string(webp.begin(), webp.end()), 50, 30, 6);
  }
  write_text(dir.file("labels/train/3.txt"), "1 0.5 0.5 0.4 0.4\n");
  const auto handed = run_binary(detrain_binary(), args + " --split both", "LD_DEBUG=files");
  INFO(handed.output);
  CHECK(handed.exit_code == 0);
  CHECK(loads(handed.output, "libtorch_cpu"));
  const auto handed_quiet = run_detrain(args + " --split both");
  const auto full_both = run_binary(detrain_torch_binary(), args + " --split both");
  CHECK(stats_report(handed_quiet.output) == stats_report(full_both.output));
  CHECK_THAT(handed_quiet.output,
             Catch::Contains("3 images, 0 backgrounds (no targets), 4 annotations"));
}

TEST_CASE("detrain runs eval, config, --help and --version without LibTorch or OpenCV",
          "[smoke][cli][front]") {
  TempDir dir;
  const EvalFiles eval = perfect_eval(dir);
  const std::vector<std::string> commands = {"--version", "--help", "config show", "config dump",
                                             "eval --gt " + eval.gt + " --dt " + eval.dt};
  for (const std::string& args : commands) {
    const auto r = run_binary(detrain_binary(), args, "LD_DEBUG=files");
    INFO("detrain " << args << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(loads(r.output, "libspdlog"));  // the trace works: the front end's own libraries
    CHECK_FALSE(loads(r.output, "libtorch"));
    CHECK_FALSE(loads(r.output, "libc10"));
    CHECK_FALSE(loads(r.output, "libopencv"));
  }
  const auto scored = run_detrain("eval --gt " + eval.gt + " --dt " + eval.dt);
  CHECK_THAT(scored.output,
             Catch::Contains("(AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 1.000"));
  // The same trace sees LibTorch where a command needs it: `train --help` is detrain-torch's.
  const auto train_help = run_binary(detrain_binary(), "train --help", "LD_DEBUG=files");
  INFO(train_help.output);
  CHECK(train_help.exit_code == 0);
  CHECK(loads(train_help.output, "libtorch_cpu"));
  CHECK_THAT(train_help.output, Catch::Contains("--max-iterations"));

  // Whatever follows the command goes to detrain-torch unread, a "--" included.
  const auto after_marker = run_detrain("train -- --foo");
  INFO(after_marker.output);
  CHECK(after_marker.exit_code == 3);
  CHECK_THAT(after_marker.output, Catch::Contains("`--foo` is neither an Ultralytics"));
}

TEST_CASE("both executables list the same commands and report the same build",
          "[smoke][cli][front]") {
  const auto front = run_detrain("--help");
  const auto full = run_binary(detrain_torch_binary(), "--help");
  REQUIRE(front.exit_code == 0);
  REQUIRE(full.exit_code == 0);
  CHECK(front.output == full.output);
  for (const char* command :
       {"config", "model", "bench", "eval", "train", "val", "predict", "export", "data"})
    CHECK_THAT(front.output, Catch::Contains(std::string("\n  ") + command + " "));
  // `data` is the front end's own (stats runs there) and reads the same in both.
  for (const char* args : {"data --help", "data stats --help"})
    CHECK(run_detrain(args).output == run_binary(detrain_torch_binary(), args).output);

  const auto v_front = run_detrain("--version");
  const auto v_full = run_binary(detrain_torch_binary(), "--version");
  INFO(v_front.output << "\n---\n" << v_full.output);
  REQUIRE(v_front.exit_code == 0);
  REQUIRE(v_full.exit_code == 0);
  CHECK(lines(v_front.output) == 3);
  CHECK(line(v_front.output, 0) == line(v_full.output, 0));  // detrain <version> (<git>)
  CHECK(line(v_front.output, 2) == line(v_full.output, 2));  // OpenCV, cores
  // Without an NVIDIA device node CUDA has no device, which the front end can tell unaided.
  std::error_code ec;
  if (!fs::exists("/dev/nvidia0", ec))
    CHECK(line(v_front.output, 1) == line(v_full.output, 1));
  else
    CHECK(line(v_front.output, 1).substr(0, 30) == line(v_full.output, 1).substr(0, 30));
}

TEST_CASE("without detrain-torch beside it detrain still evaluates and says what is missing",
          "[smoke][cli][front]") {
  TempDir dir;
  const EvalFiles eval = perfect_eval(dir);
  const std::string lone = dir.file("bin/detrain");
  fs::create_directories(dir.file("bin"));
  fs::copy_file(detrain_binary(), lone);
  fs::permissions(lone, fs::perms::owner_all);

  const auto scored = run_binary(lone, "eval --gt " + eval.gt + " --dt " + eval.dt);
  INFO(scored.output);
  CHECK(scored.exit_code == 0);
  CHECK_THAT(scored.output, Catch::Contains("= 1.000"));

  const auto train = run_binary(lone, "train --max-iterations 1");
  INFO(train.output);
  CHECK(train.exit_code == 5);  // ExitCode::kIo
  CHECK(lines(train.output) == 1);
  CHECK(train.output.rfind("detrain: error: `detrain train` runs in " +
                               dir.file("bin/detrain-torch") +
                               ", which cannot be started (No such file or directory)",
                           0) == 0);
}

TEST_CASE("a stop the user asked for exits 130 with a line that is no error",
          "[smoke][cli][train]") {
  TempDir dir;
  const auto synth = run_detrain(
      "data synth --out synth --train-images 16 --val-images 8 "
      "--min-side 96 --max-side 128 --max-objects 3",
      dir.path());
  REQUIRE(synth.exit_code == 0);
  // 64 px, batch 4, one thread: a CPU run of a few seconds (tests/train/train_fixtures.h's
  // settings, from the command line).
  const std::string args =
      " data.dataset=synth/synth.yaml data.imgsz=64 data.batch=4 data.workers=1 "
      "train.warmup_epochs=0 train.precision=fp32 train.progress=off train.plots=false "
      "runtime.threads=1 train.project=" +
      dir.file("runs");

  // --max-iterations takes the path of Ctrl-C: a resumable checkpoint, exit 130.
  const auto capped =
      run_detrain("train --max-iterations 1" + args + " train.name=capped", dir.path());
  INFO(capped.output);
  CHECK(capped.exit_code == 130);
  CHECK_THAT(capped.output, Catch::Contains("\ndetrain: stopped; a resumable checkpoint is in " +
                                            dir.file("runs/capped") + "/weights/last.ckpt"));
  CHECK_THAT(capped.output, !Catch::Contains("error"));

  // SIGINT to the pid the shell started: detrain has become detrain-torch by exec, so the signal
  // reaches the trainer, whose handler is in place once it names the run directory; it stops
  // after the iteration it is in. train.epochs=1000: the run cannot end first.
  const std::string script =
      "cd '" + dir.path() + "' && ('" + detrain_binary() + "' train" + args +
      " train.name=signalled train.epochs=1000 > run.log 2>&1 & " +
      "pid=$!; for i in $(seq 1200); do grep -q 'run directory' run.log " +
      "&& break; sleep 0.1; done; kill -INT $pid; wait $pid; echo $? > run.rc)";
  REQUIRE(std::system(script.c_str()) == 0);
  std::ifstream log_file(dir.file("run.log")), rc_file(dir.file("run.rc"));
  const std::string log((std::istreambuf_iterator<char>(log_file)), {});
  int rc = -1;
  rc_file >> rc;
  INFO(log);
  CHECK(rc == 130);
  CHECK_THAT(log, Catch::Contains("\ndetrain: stopped; a resumable checkpoint is in " +
                                  dir.file("runs/signalled") + "/weights/last.ckpt"));
  CHECK_THAT(log, !Catch::Contains("detrain: error"));
  CHECK(fs::exists(dir.file("runs/signalled/weights/last.ckpt")));
}
