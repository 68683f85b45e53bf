// `detrain train -d/-m/-w`: the short flags the README promises on every command, as the
// data.dataset / model.arch / model.weights overrides they stand for. Each is shown to reach its
// key by the error a missing file gives; a section.key=value given too wins.
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "test_support.h"

using detrain::test::run_detrain;

TEST_CASE("train takes -d -m -w as data.dataset model.arch model.weights", "[smoke][cli]") {
  const auto help = run_detrain("train --help");
  CHECK(help.output.find("-d,--data") != std::string::npos);
  CHECK(help.output.find("-m,--model") != std::string::npos);
  CHECK(help.output.find("-w,--weights") != std::string::npos);

  const auto data = run_detrain("train -d /nonexistent/d.yaml -m yolov8n train.epochs=1");
  CHECK(data.exit_code != 0);
  CHECK(data.output.find("'/nonexistent/d.yaml' not found") != std::string::npos);

  const auto model = run_detrain("train -m /nonexistent/arch.yaml train.epochs=1");
  CHECK(model.exit_code != 0);
  CHECK(model.output.find("model '/nonexistent/arch.yaml' not found") != std::string::npos);

  const auto weights = run_detrain("train -m yolov8n -w /nonexistent/w.ckpt train.epochs=1");
  CHECK(weights.exit_code == static_cast<int>(detrain::ExitCode::kIo));
  CHECK(weights.output.find("model.weights=/nonexistent/w.ckpt does not exist") !=
        std::string::npos);

  const auto wins = run_detrain("train -m yolov8n model.arch=/nonexistent/other.yaml");
  CHECK(wins.output.find("'/nonexistent/other.yaml' not found") != std::string::npos);
}
