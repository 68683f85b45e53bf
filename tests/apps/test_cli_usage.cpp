// Command-line mistakes as Ultralytics users make them: every usage error is one line with the
// "detrain: error:" prefix and exit 2, with the hint that fixes it; config keys typed bare or as
// options are mapped to section.key; paths in errors are the ones looked for.
#include <catch2/catch.hpp>
#include <string>

#include "test_support.h"

using detrain::test::run_detrain;
using detrain::test::TempDir;

namespace {

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("usage errors are one prefixed line with a hint and exit 2", "[smoke][cli][usage]") {
  const auto typo = run_detrain("trian");
  INFO(typo.output);
  CHECK(typo.exit_code == 2);
  CHECK(typo.output.rfind("detrain: error: unknown command 'trian'; did you mean 'train'?", 0) ==
        0);
  CHECK(lines(typo.output) == 1);

  const auto option = run_detrain("train --epochs 3");
  INFO(option.output);
  CHECK(option.exit_code == 2);
  CHECK(option.output.rfind("detrain: error: ", 0) == 0);
  CHECK_THAT(option.output, Catch::Contains("train.epochs=3"));
  CHECK(lines(option.output) == 1);

  const auto equals = run_detrain("train --imgsz=320");
  CHECK(equals.exit_code == 2);
  CHECK_THAT(equals.output, Catch::Contains("data.imgsz=320"));

  const auto ambiguous = run_detrain("train --batch 8");
  CHECK(ambiguous.exit_code == 2);
  CHECK_THAT(ambiguous.output, Catch::Contains("data.batch") && Catch::Contains("val.batch"));

  const auto misspelt = run_detrain("predict --weigths x.ckpt -s a.jpg -o out");
  INFO(misspelt.output);
  CHECK(misspelt.exit_code == 2);
  CHECK_THAT(misspelt.output, Catch::Contains("did you mean --weights?"));
  CHECK(lines(misspelt.output) == 1);

  const auto missing = run_detrain("predict -w x.ckpt");
  INFO(missing.output);
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.rfind("detrain: error: ", 0) == 0);
  CHECK_THAT(missing.output, Catch::Contains("--source") && Catch::Contains("--help"));
  CHECK(lines(missing.output) == 1);

  const auto nothing = run_detrain("");
  CHECK(nothing.exit_code == 2);
  CHECK(nothing.output.rfind("detrain: error: ", 0) == 0);

  const auto marker = run_detrain("-- train");  // "--" once made the hint code throw
  INFO(marker.output);
  CHECK(marker.exit_code == 2);
  CHECK(marker.output.rfind("detrain: error: ", 0) == 0);
  CHECK(lines(marker.output) == 1);

  // -s and -w mean source and weights wherever they exist.
  CHECK(run_detrain("model -s n").exit_code == 2);
  CHECK(run_detrain("bench loader -w 1").exit_code == 2);
}

TEST_CASE("bare config keys resolve to their one section and say so", "[smoke][cli][usage]") {
  const auto bare = run_detrain("config show epochs=3");
  INFO(bare.output);
  REQUIRE(bare.exit_code == 0);
  CHECK_THAT(bare.output, Catch::Contains("epochs taken as train.epochs"));
  const size_t row = bare.output.find("\n  train.epochs ");  // the table's row
  REQUIRE(row != std::string::npos);
  const std::string line = bare.output.substr(row + 1, bare.output.find('\n', row + 1) - row - 1);
  CHECK_THAT(line, Catch::Contains(" 3 ") && Catch::EndsWith("override"));

  const auto two = run_detrain("config show batch=4");
  INFO(two.output);
  CHECK(two.exit_code == 3);
  CHECK_THAT(two.output, Catch::Contains("data.batch") && Catch::Contains("several sections"));
}

TEST_CASE("errors name the path they looked for", "[smoke][cli][usage]") {
  TempDir dir;
  const auto resume = run_detrain("train --resume " + dir.file("runs/nope"));
  INFO(resume.output);
  CHECK(resume.exit_code == 5);
  CHECK_THAT(resume.output, Catch::Contains("--resume " + dir.file("runs/nope") + ": no such"));

  detrain::test::write_text(dir.file("x.yaml"), "base: coco-nothere.yaml\ntrain:\n  epochs: 2\n");
  const auto base = run_detrain("config show -c " + dir.file("x.yaml"));
  INFO(base.output);
  CHECK(base.exit_code == 3);
  CHECK_THAT(base.output, Catch::Contains("base: coco-nothere.yaml not found") &&
                              Catch::Contains(dir.file("coco-nothere.yaml")));

  const auto scale = run_detrain("model -m yolo26q");
  INFO(scale.output);
  CHECK(scale.exit_code == 6);
  CHECK_THAT(scale.output, Catch::Contains("unknown scale q (n, s, m, l, x)"));
  CHECK(run_detrain("model -m yolo26s").exit_code == 0);
}
