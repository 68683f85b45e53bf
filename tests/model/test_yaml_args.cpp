// Row arguments of architecture YAMLs: Python-literal typing, symbol resolution, Python repr,
// and typed reads that name the row and the argument when they fail.
#include <catch2/catch.hpp>

#include "model/yaml_args.h"

using namespace detrain;
using namespace detrain::model;

namespace {

std::vector<Arg> parse(const std::string& yaml) {
  const std::map<std::string, Arg> symbols{{"nc", Arg::integer(80)},
                                           {"kpt_shape", Arg::ints({17, 3})}};
  std::vector<Arg> args;
  for (const auto& node : YAML::Load(yaml)) args.push_back(to_arg(node, symbols, "row"));
  return args;
}

}  // namespace

TEST_CASE("row arguments are typed and printed like Python literals", "[unit][model]") {
  const auto args = parse(R"([nc, None, "nearest", nearest, 0.25, 1e-3, 2.0, True, false,
                              [1, 2], -3, kpt_shape, '5'])");
  CHECK(repr(Arg::items(args)) ==
        "[80, None, 'nearest', 'nearest', 0.25, 0.001, 2.0, True, False, [1, 2], -3, "
        "[17, 3], '5']");
  CHECK(args[0].kind == Arg::Kind::kInt);
  CHECK(args[1].kind == Arg::Kind::kNone);
  CHECK(args[3].kind == Arg::Kind::kString);   // unknown bare word: a string, as literal_eval fails
  CHECK(args[12].kind == Arg::Kind::kString);  // quoted digits stay a string
}

TEST_CASE("typed reads fall back on None and name the row on a wrong type", "[unit][model]") {
  const RowArgs a(parse("[3, None, 0.5, True, [3, 1], x]"), "net.yaml layer 4");
  CHECK(a.integer(0, 1) == 3);
  CHECK(a.integer(1, 7) == 7);  // None takes the default
  CHECK(a.integer(9, 5) == 5);  // absent too
  CHECK(a.real(2, 0) == 0.5);
  CHECK(a.real(0, 0) == 3.0);
  CHECK(a.flag(3, false));
  CHECK(a.integer(3, 0) == 1);  // Python: True == 1
  CHECK(a.pair(4, {0, 0}) == std::pair<int64_t, int64_t>{3, 1});
  CHECK(a.pair(0, {0, 0}) == std::pair<int64_t, int64_t>{3, 3});
  CHECK(a.text(5, "") == "x");
  CHECK_THROWS_WITH(a.integer(2, 0), "net.yaml layer 4: argument 3 is 0.5, expected an integer");
  CHECK_THROWS_WITH(a.flag(5, true), "net.yaml layer 4: argument 6 is 'x', expected True or False");
  CHECK_THROWS_WITH(a.text(0, ""), "net.yaml layer 4: argument 1 is 3, expected a string");
}
