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
          0.28897560132108097, 0.6287307744251542, 0.2383510293496181, 0.37442852205868155,
          0.31943492942906726, 0.26250802761887354, 0.2529101103138809, 0.3198904205247489,
          0.31991884980690954, 0.3859218416910724, 0.32474229691876755, 0.2935132275132275},
        /*category_ap=*/{
          0.34208494152168223, 0.16666666666666666, 0.4276284771334276, 0.5336633663366337,
          0.6999999999999998, -1.0, 0.02524752475247525, 0.02244224422442244, 0.2524752475247524,
          0.22524752475247525, -1.0, -1.0, 0.20198019801980197, 0.30495049504950494, 0.0, 0.0,
          0.402970297029703, 0.10099009900990097, 0.0, 0.3346534653465347, 0.3029702970297029,
          -1.0, -1.0, -1.0, 0.43432343234323423, 0.0, 0.523102310231023, 0.13891089108910892,
          -1.0, 0.0, 0.19999999999999998, 0.05, 0.45643564356435645, 0.0, 0.600990099009901,
          0.44455445544554456, 0.5514851485148515, 0.5999999999999999, 0.0, 0.33299832593149425,
          0.500990099009901, 0.35277227722772275, 0.39247524752475244, 0.33432343234323436, 0.4,
          0.2659240924092409, -1.0, 0.2514851485148515, 0.0, 0.2054125412541254,
          0.2681282413955682, 0.09999999999999999, -1.0, 0.4316831683168317, 0.2533910891089109,
          0.14908769448373407, 0.37715464403583215, 0.7252475247524752, 0.0891089108910891,
          0.100990099009901, 0.31153543925821153, 0.1, 0.201980198019802, 0.29999999999999993,
          -1.0, 0.3188118811881188, -1.0, 0.5999999999999999, 0.39999999999999997,
          0.25346534653465347, 0.49999999999999994, 0.3485148514851485, 0.35148514851485146,
          0.14617161716171617, 0.1, 0.5534653465346535, -1.0, -1.0, 0.5999999999999999,
          0.400990099009901}}},
      {"instances_bbox_nocats",
       {/*stats=*/{
          0.3001324283522556, 0.6482867699141919, 0.2449446937665243, 0.3054583982646772,
          0.315980211377819, 0.2799906136951834, 0.06823821339950373, 0.3109181141439205,
          0.3600496277915632, 0.35228426395939083, 0.37238095238095237, 0.36237623762376237},
        /*category_ap=*/{
          0.3001324283522556}}},
      {"instances_ties",
       {/*stats=*/{
          0.25253392740240144, 0.5099860146163542, 0.22387841430689626, 0.2429959304700641,
          0.31149049793786016, 0.2655802598150747, 0.2241329373399287, 0.2779732938354305,
          0.27858979728775485, 0.2588473492319646, 0.33380952380952383, 0.2964100529100529},
        /*category_ap=*/{
          0.26364770069597665, 0.0, 0.24521325209444023, 0.21584158415841584, 0.39999999999999997,
          -1.0, 0.0, 0.23366336633663368, 0.4039603960396039, 0.10019801980198019, -1.0, -1.0,
          0.601980198019802, 0.2907590759075907, 0.0, 0.7999999999999999, 0.35346534653465334,
          0.0, 0.2, 0.26613861386138615, 0.35346534653465334, -1.0, -1.0, -1.0,
          0.4524752475247525, 0.5999999999999999, 0.2633663366336634, 0.2524752475247525, -1.0,
          0.0, 0.0, 0.0, 0.4643564356435644, 0.0, 0.21749174917491745, 0.4607260726072608,
          0.4699669966996699, 0.29999999999999993, 0.0, 0.39621353311801766, 0.0,
          0.28465346534653463, 0.3029702970297029, 0.05099009900990099, 0.3215841584158416,
          0.23767326732673266, -1.0, 0.0, 0.6999999999999998, 0.061386138613861385,
          0.25203489579727206, 0.0, -1.0, 0.3673267326732673, 0.24432258610476432,
          0.37285007072135784, 0.3632963779571235, 0.2524752475247524, 0.4534653465346535,
          0.21881188118811878, 0.31872937293729375, 0.0, 0.4524752475247525, 0.29999999999999993,
          -1.0, 0.14587458745874585, -1.0, 0.0, 0.29999999999999993, 0.18985148514851485, 0.0,
          0.03366336633663366, 0.402970297029703, 0.2542904290429043, 0.3029702970297029,
          0.4287128712871287, -1.0, -1.0, 0.0, 0.700990099009901}}},
      {"keypoints_with_box",
       {/*stats=*/{
          0.5162638106573306, 0.8022215404091667, 0.571467569912571, 0.5971795331156736,
          0.4768966787237487, 0.5955882352941176, 0.9264705882352942, 0.6470588235294118,
          0.6411764705882353, 0.55},
        /*category_ap=*/{
          0.5162638106573306}}},
      {"keypoints_only",
       {/*stats=*/{
          0.3891960271980248, 0.6679583361757135, 0.3756187337649511, 0.4402351653244725,
          0.381880380336989, 0.4779411764705882, 0.8823529411764706, 0.4264705882352941,
          0.4911764705882352, 0.4647058823529412},
        /*category_ap=*/{
          0.3891960271980248}}},
      {"synthetic",
       {/*stats=*/{
          0.20222008370379926, 0.3667092850227508, 0.19322339742830374, 0.20609689045427104,
          0.23325578006115613, 0.21077858551520343, 0.3113057522646912, 0.34501048796978223,
          0.34532122243305907, 0.34586152588079466, 0.3550875, 0.33023181404870366},
        /*category_ap=*/{
          0.17962917907074474, 0.2176061821179337, 0.18891011443729647, 0.213253065821047,
          0.2069889925263654, 0.10654749494419782, 0.20636372250347929, 0.14268664603040812,
          0.10637730354556225, 0.11086513715736553, 0.27552782750414534, 0.2104057421319521,
          0.2253974950237009, 0.19327291850678568, 0.22467727000837953, 0.11808051738401079,
          0.12447181165738229, 0.1686271484291286, 0.22339898142397566, 0.1326697796110062,
          0.15038660499584963, 0.19055990187005295, 0.17278148189526216, 0.23122909699605726,
          0.1744440954634105, 0.24333958460299784, 0.23163678158105086, 0.13282439701497628,
          0.28880080315723883, 0.31772141145959704, 0.17372765722833966, 0.28851186454443356,
          0.15620866652326648, 0.17934953495349534, 0.1397833430401864, 0.14972008311942306,
          0.15782685960903778, 0.07628157332760147, 0.209123430535509, 0.168275836454967,
          0.3181056538329497, 0.2030033161953405, 0.376465595339469, 0.13286058137484907,
          0.303342341553212, 0.2173818768613137, 0.04391167801949666, 0.1321170431940967,
          0.14471690441469398, 0.16074257425742575, 0.282224146245942, 0.030751429668828947,
          0.2842897667693191, 0.3252641650719693, 0.0731060436360378, 0.16654727478272927,
          0.16025970542209636, 0.17103566893440905, 0.4154949215851818, 0.2749099909990999,
          0.16353520654263226, 0.3115334253757364, 0.26526239662954704, 0.3831527451184134,
          0.32493171730966197, 0.16283778753815228, 0.23215841584158417, 0.27267434094911214,
          0.1443894389438944, 0.22097694384823097, 0.16455478045889718, 0.256604568351572,
          0.13118811881188117, 0.2521978793624043, 0.2137066831683168, 0.18213898633156564,
          0.20031491953749456, 0.236618373229728, 0.20863838691561465, 0.2253705656734195}}},
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
