// The one bench report renders the same rows as a text table and as JSON: table-only and
// JSON-only columns, "-" cells, notes, the keyed layout (bench eval's "seconds") and the bare
// array (bench step).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "bench/report.h"

using namespace detrain::bench;

namespace {

Report two_rows() {
  Report r;
  r.title = "demo at 320 px";
  r.head = {{"model", "demo"}, {"imgsz", 320}};
  r.rows_key = "timings";
  r.columns = {{"stage", "stage"}, {"median ms", "median_ms"}, {"", "min_ms"}, {"vs a", ""}};
  r.rows.push_back({label("a"), number(12.345, 1), number(11.0, 1), text("1.00x")});
  r.rows.push_back({label("bb"), number_or_dash(0, 1), number(0.5, 1), text("0.04x")});
  r.tail = {{"diff", 0.25}};
  r.notes = {"load 1.5"};
  return r;
}

}  // namespace

TEST_CASE("bench report renders one table and the same figures as JSON", "[unit][bench]") {
  const Report r = two_rows();
  CHECK(render_text(r) ==
        "demo at 320 px\n"
        "  stage  median ms   vs a\n"
        "  a           12.3  1.00x\n"
        "  bb             -  0.04x\n"
        "  load 1.5\n");
  const auto j = nlohmann::ordered_json::parse(render_json(r));
  const std::vector<std::string> keys = {"model", "imgsz", "timings", "diff"};
  std::vector<std::string> found;
  for (const auto& [key, value] : j.items()) found.push_back(key);
  CHECK(found == keys);  // head, rows, tail in that order
  REQUIRE(j["timings"].size() == 2);
  // Full values in JSON, no table-only column, the JSON-only one present.
  CHECK(j["timings"][0] ==
        nlohmann::ordered_json{{"stage", "a"}, {"median_ms", 12.345}, {"min_ms", 11.0}});
  CHECK(j["timings"][1]["median_ms"] == 0.0);
  CHECK(j["diff"] == 0.25);
  CHECK(render_json(r).back() == '\n');
}

TEST_CASE("bench report keyed rows and a bare row array", "[unit][bench]") {
  Report keyed;
  keyed.head = {{"kind", "eval"}};
  keyed.rows_key = "seconds";
  keyed.layout = RowsLayout::kKeyed;
  keyed.columns = {{"step", "step"}, {"wall s", "wall"}, {"cpu s", "cpu"}};
  keyed.rows.push_back({label("load_gt"), number(0.5, 4), number(0.25, 4)});
  const auto k = nlohmann::json::parse(render_json(keyed));
  CHECK(k["seconds"]["load_gt"]["wall"] == 0.5);
  CHECK(k["seconds"]["load_gt"].size() == 2);
  CHECK(render_text(keyed) == "  step     wall s   cpu s\n  load_gt  0.5000  0.2500\n");

  Report bare;
  bare.columns = {{"precision", "precision"}, {"img/s", "images_per_s"}};
  bare.rows.push_back({label("fp32"), number(3.5, 2)});
  const auto b = nlohmann::json::parse(render_json(bare));
  REQUIRE(b.is_array());
  CHECK(b[0]["images_per_s"] == 3.5);
  bare.head = {{"x", 1}};  // a bare array has nowhere to put facts
  CHECK_THROWS(render_json(bare));
}
