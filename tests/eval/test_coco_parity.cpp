// End-to-end parity of the COCO evaluator with pycocotools on deterministic cases: coco-mini
// annotations with synthetic detections (bbox with use_cats on and off, heavy score ties,
// keypoints with and without boxes), a synthetic COCO-like set (~1% crowd, 100 detections per
// image) and two handcrafted quirk sets. Every input goes through the JSON loaders.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "coco_test_cases.h"

namespace {

using detrain::test::EvalCase;

struct Expected {
  std::vector<double> stats;
  std::vector<double> category_ap;  // precision[:, :, k, 0, -1] > -1, mean (detectron2's AP)
};

// Provenance of every number below: pycocotools 2.0.11 (github.com/ppwwyyxx/cocoapi at commit
// ac87f5077ad6b8864c2dc5e93d14cae62d1db05a, PythonAPI built in place with Cython 0.29.32 against
// Debian's python3.11 and numpy 1.24.2 on x86-64 without AVX-512, so np.exp is glibc's exp), run
// outside the project on the exact inputs this test builds (DETRAIN_EVAL_KEEP_INPUTS=DIR writes
// them): COCO(gt.json); loadRes(results.json); COCOeval(gt, dt, iou_type); params.useCats as the
// case says; evaluate(); accumulate(); summarize(); stats printed with repr(). Per-category AP
// is np.mean(p[p > -1]) of p = eval['precision'][:, :, k, 0, -1], -1 when empty.
const std::map<std::string, Expected>& expectations() {
  // clang-format off
  static const std::map<std::string, Expected> table = {
      {"instances_bbox",
       {/*stats=*/{
          0.2577363623415733, 0.5593795671830658, 0.2160735792598053, 0.2532176189407865,
          0.2956718309677073, 0.29924662128399687, 0.2297041934964166, 0.2872302826642968,
          0.287795687408806, 0.2713298667144821, 0.3085546218487395, 0.31453174603174605},
        /*category_ap=*/{
          0.2760138808568117, 0.075, 0.23811095395253812, 0.3029702970297029, 0.1333333333333333,
          -1.0, 0.4757425742574257, 0.200990099009901, 0.2524752475247524, 0.36619519094766617,
          -1.0, -1.0, 0.1262376237623762, 0.21782178217821782, 0.0, 0.7999999999999999,
          0.2524752475247524, 0.5514851485148514, 0.0, 0.5056105610561056, 0.20198019801980197,
          -1.0, -1.0, -1.0, 0.4514851485148515, 0.19999999999999998, 0.1663366336633663,
          0.20707920792079207, -1.0, 0.0, 0.6999999999999998, 0.49999999999999994,
          0.6079207920792079, 0.6999999999999998, 0.5504950495049505, 0.02574257425742574, 0.1,
          0.0, 0.5999999999999999, 0.32076630982425974, 0.3029702970297029, 0.22118811881188122,
          0.31683168316831684, 0.22772277227722773, 0.13465346534653463, 0.244022709963304, -1.0,
          0.15148514851485145, 0.29999999999999993, 0.17491749174917487, 0.3223856671381424, 0.0,
          -1.0, 0.299009900990099, 0.28345163087737346, 0.3180198019801981, 0.2827942237543593,
          0.20198019801980197, 0.32003300330033, 0.11361386138613859, 0.31530528052805284,
          0.6999999999999998, 0.4039603960396039, 0.0, -1.0, 0.2851485148514851, -1.0, 0.0, 0.0,
          0.23828382838283826, 0.09999999999999999, 0.10099009900990098, 0.03745874587458745,
          0.2516501650165016, 0.0, 0.1782178217821782, -1.0, -1.0, 0.0, 0.335973597359736}}},
      {"instances_bbox_nocats",
       {/*stats=*/{
          0.259225219985687, 0.5864937476240358, 0.20544093015586942, 0.2632723922059284,
          0.25144910532661807, 0.2685707823214992, 0.07468982630272954, 0.2766749379652605,
          0.3270471464019851, 0.3213197969543147, 0.3323809523809524, 0.3326732673267327},
        /*category_ap=*/{
          0.259225219985687}}},
      {"instances_ties",
       {/*stats=*/{
          0.31725891722966776, 0.6259854190338392, 0.2860975859739021, 0.3367067179801989,
          0.33167629273913984, 0.25638064511665193, 0.29170286893578334, 0.36150839711915905,
          0.36236495902049715, 0.36105672105672104, 0.35834733893557424, 0.2733306878306878},
        /*category_ap=*/{
          0.27880842905205144, 0.0, 0.32623762376237625, 0.3673267326732673, 0.49999999999999994,
          -1.0, 0.0, 0.5124752475247525, 0.45445544554455436, 0.2954738330975955, -1.0, -1.0,
          0.4524752475247524, 0.35148514851485146, 0.0, 0.5999999999999999, 0.5184818481848184,
          0.6, 0.4, 0.45854785478547855, 0.0, -1.0, -1.0, -1.0, 0.07574257425742574, 0.05,
          0.32475247524752476, 0.2793729372937294, -1.0, 0.5999999999999999, 0.3, 0.0,
          0.37755775577557754, 0.0, 0.5, 0.3699669966996699, 0.2504950495049505,
          0.6999999999999998, 0.2, 0.2410430826257117, 0.4039603960396039, 0.23316831683168318,
          0.23465346534653464, 0.44785478547854785, 0.3227722772277228, 0.256974543608207, -1.0,
          0.30198019801980197, 0.0, 0.11746817538896745, 0.24192969571682443, 0.6999999999999998,
          -1.0, 0.39900990099009903, 0.2966603103102812, 0.3011251125112511, 0.29280486613625806,
          0.0, 0.30198019801980197, 0.26798679867986797, 0.24306930693069306, 0.7999999999999999,
          0.30198019801980197, 0.0, -1.0, 0.37194719471947196, -1.0, 0.8999999999999999, 0.0,
          0.35247524752475246, 0.8999999999999999, 0.11782178217821782, 0.26584158415841586,
          0.28514851485148507, 0.26798679867986797, 0.32722772277227724, -1.0, -1.0,
          0.39999999999999997, 0.21782178217821782}}},
      {"keypoints_with_box",
       {/*stats=*/{
          0.4243225127511702, 0.6626475741686413, 0.4243550219296103, 0.5560184864717012,
          0.3322677652422257, 0.5147058823529411, 0.8529411764705882, 0.47058823529411764,
          0.5999999999999999, 0.4294117647058823},
        /*category_ap=*/{
          0.4243225127511702}}},
      {"keypoints_only",
       {/*stats=*/{
          0.4215749712427742, 0.7009011731303741, 0.4294722097955746, 0.4515352166571148,
          0.41654734217821016, 0.4779411764705882, 0.8235294117647058, 0.45588235294117646,
          0.488235294117647, 0.4676470588235294},
        /*category_ap=*/{
          0.4215749712427742}}},
      {"synthetic",
       {/*stats=*/{
          0.18230743143836614, 0.3511793590651945, 0.16587105328902227, 0.19488421035011966,
          0.21139211667969368, 0.19122111735353187, 0.295515809203025, 0.32548488030200823,
          0.32582869169690015, 0.3195155222817545, 0.33388856315653426, 0.32173057249180514},
        /*category_ap=*/{
          0.1778014495853839, 0.14978381134651964, 0.22204800470828623, 0.18008829859373973,
          0.14496412027062358, 0.08343943552469667, 0.22437515491726387, 0.18933458549223006,
          0.20320309770876865, 0.23075604237326575, 0.1839389174766533, 0.1467298696815261,
          0.16466307053312176, 0.18092147393253977, 0.14291449999712855, 0.20527680752427155,
          0.13649078492152292, 0.23900854153675682, 0.11423275622756783, 0.18295652333996076,
          0.21610701149599829, 0.15180927214343057, 0.1946048334832086, 0.12097117566411661,
          0.17477933322001818, 0.12794801478911222, 0.20460772497873603, 0.18719849109093914,
          0.16102031596282634, 0.1768091391257151, 0.14238989707532834, 0.31707649652849557,
          0.24724567851521992, 0.14265908840905958, 0.12760720390991265, 0.31950066822527806,
          0.2871287128712871, 0.13511240160560906, 0.25848322332233226, 0.10474144316940293,
          0.1715016676641153, 0.22472926918950192, 0.19071990049046328, 0.21500937795693034,
          0.17715517980369466, 0.17633107337265158, 0.10865300673987995, 0.3604844360366558,
          0.09911511207419121, 0.10300469950841237, 0.2327613791824147, 0.09425021256704426,
          0.20855672597334918, 0.12131882972732787, 0.24533003300330036, 0.2741296741559702,
          0.19812170441182048, 0.16179880741110547, 0.1898187060085319, 0.13108910891089107,
          0.19385996694925223, 0.2917358977277038, 0.05665566556655667, 0.18936775206896517,
          0.045126950240500646, 0.03736085166398413, 0.15459983498349836, 0.2973597359735974,
          0.24381427273162096, 0.43041642399534075, 0.2594983302423462, 0.16135823563909987,
          0.0630178486987113, 0.01018797531927106, 0.3637552016071172, 0.41083015993907085,
          0.150783492415873, 0.01931031564694931, 0.14083672869848235, 0.08011259949524362}}},
      {"quirks_bbox",
       {/*stats=*/{
          0.6156215621562157, 0.6156215621562157, 0.6156215621562157, 0.3206397562833206, 1.0,
          0.5, 0.4000000000000001, 0.8000000000000002, 0.9000000000000001, 0.875, 1.0, 1.0},
        /*category_ap=*/{
          0.5346534653465347, 0.6965896589658968, -1.0}}},
      {"quirks_bbox_nocats",
       {/*stats=*/{
          0.44146414641464143, 0.4414641464146415, 0.4414641464146415, 0.20132013201320137,
          0.9759547383309759, 0.5, 0.1, 0.8, 0.9, 0.8, 1.0, 1.0},
        /*category_ap=*/{
          0.44146414641464143}}},
      {"quirks_keypoints_box",
       {/*stats=*/{
          0.46026402640264014, 0.5709570957095709, 0.5709570957095709, 0.5148514851485149, 0.5,
          0.675, 0.75, 0.75, 0.5666666666666667, 1.0},
        /*category_ap=*/{
          0.46026402640264014}}},
      {"quirks_keypoints_only",
       {/*stats=*/{
          0.46026402640264014, 0.5709570957095709, 0.5709570957095709, 0.5653465346534653, 0.5,
          0.675, 0.75, 0.75, 0.5666666666666667, 1.0},
        /*category_ap=*/{
          0.46026402640264014}}},
  };
  // clang-format on
  return table;
}

void check_case(const EvalCase& c) {
  const auto result = detrain::test::run_case(c);
  const auto it = expectations().find(c.name);
  REQUIRE(it != expectations().end());
  const Expected& expected = it->second;
  // Boxes involve only IEEE +, -, *, / in pycocotools' order: bit-identical. OKS calls exp(),
  // which may differ by an ulp between libm builds; 1e-12 is the bar.
  const double tolerance = c.iou_type == detrain::eval::IouType::kBbox ? 0.0 : 1e-12;
  REQUIRE(result.stats.size() == expected.stats.size());
  for (size_t i = 0; i < expected.stats.size(); ++i) {
    INFO(c.name << " stat " << i << ": " << result.stats[i] << " vs " << expected.stats[i]);
    CHECK(std::fabs(result.stats[i] - expected.stats[i]) <= tolerance);
  }
  REQUIRE(static_cast<size_t>(result.num_categories) == expected.category_ap.size());
  for (int k = 0; k < result.num_categories; ++k) {
    INFO(c.name << " category " << result.category_ids[static_cast<size_t>(k)]);
    CHECK(std::fabs(result.category_ap(k) - expected.category_ap[static_cast<size_t>(k)]) <=
          tolerance);
  }
}

void check_coco_mini(const char* name) {
  const auto c = detrain::test::coco_mini_case(name);
  if (!c) return;
  check_case(*c);
}

}  // namespace

TEST_CASE("coco parity instances bbox", "[parity][eval]") { check_coco_mini("instances_bbox"); }

TEST_CASE("coco parity instances bbox without categories", "[parity][eval]") {
  check_coco_mini("instances_bbox_nocats");
}

TEST_CASE("coco parity instances with score ties and integer boxes", "[parity][eval]") {
  check_coco_mini("instances_ties");
}

TEST_CASE("coco parity keypoints with boxes", "[parity][eval]") {
  check_coco_mini("keypoints_with_box");
}

TEST_CASE("coco parity keypoints without boxes", "[parity][eval]") {
  check_coco_mini("keypoints_only");
}

TEST_CASE("coco parity synthetic set with crowds", "[parity][eval]") {
  check_case(detrain::test::synthetic_case());
}

TEST_CASE("coco parity bbox quirks", "[parity][eval]") {
  check_case(detrain::test::quirks_bbox_case(true));
  check_case(detrain::test::quirks_bbox_case(false));
}

TEST_CASE("coco parity keypoint quirks", "[parity][eval]") {
  check_case(detrain::test::quirks_keypoints_case(true));
  check_case(detrain::test::quirks_keypoints_case(false));
}

TEST_CASE("coco results do not depend on the thread count", "[unit][eval]") {
  const EvalCase c = detrain::test::synthetic_case();
  const auto one = detrain::test::run_case(c, 1);
  for (int threads : {2, 3, 8}) {
    const auto many = detrain::test::run_case(c, threads);
    REQUIRE(many.stats == one.stats);
    REQUIRE(many.precision == one.precision);
    REQUIRE(many.recall == one.recall);
    REQUIRE(many.scores == one.scores);
  }
}
