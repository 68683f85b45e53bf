// The confusion matrix follows Ultralytics 8.4.190's rule (infer/confusion_matrix.h): the
// validation conf, not 0.25; strict thresholds; detections claim truths in confidence order.
// The expected counts were worked out by hand from that rule and are the ones 8.4.190's own
// ConfusionMatrix.process_batch gives on the same three images (checked with .venv-ref).
#include <catch2/catch.hpp>

#include "infer/confusion_matrix.h"

using detrain::infer::ConfusionMatrix;

TEST_CASE("confusion matrix: 8.4.190's conf, strict IoU and confidence-ordered claims",
          "[unit][infer]") {
  ConfusionMatrix m(2, /*conf=*/0.001);
  // Image 1: truths a (class 0) and b (class 1).
  m.add({{0, 0, 10, 10}, {20, 0, 30, 10}}, {0, 1},
        {
            {0, 0, 10, 6},     // conf 0.9, class 1, IoU 0.60 with a: claims a first (a wrong class)
            {0, 0, 10, 9.5},   // conf 0.5, class 0, IoU 0.95 with a: a is taken -> background
            {20, 0, 30, 10},   // conf 0.1, class 1 on b: counted (0.25 would have missed b)
            {50, 50, 60, 60},  // conf 0.001: not above conf, ignored
            {70, 70, 80, 80},  // conf 0.05, class 1, on nothing -> background
        },
        {0.9, 0.5, 0.1, 0.001, 0.05}, {1, 0, 1, 0, 1});
  // Image 2: no truths; one detection above conf (class 0), one below.
  m.add({}, {}, {{0, 0, 5, 5}, {1, 1, 4, 4}}, {0.5, 0.0005}, {0, 1});
  // Image 3: IoU exactly 0.45 is not a match (strictly greater): a miss and a background hit.
  m.add({{0, 0, 100, 100}}, {0}, {{0, 0, 100, 45}}, {0.7}, {0});

  const std::vector<std::vector<double>> expected = {
      // true: class 0, class 1, background
      {0, 0, 3},  // predicted class 0: image 1's IoU-0.95 box, image 2's, image 3's
      {1, 1, 1},  // predicted class 1: on a (wrong class), on b, on nothing
      {1, 0, 0},  // background: image 3's truth missed
  };
  CHECK(m.counts() == expected);
  CHECK(m.conf() == 0.001);

  // The rule of earlier releases (conf 0.25) would count b as missed and drop the 0.1 and 0.05
  // boxes: the threshold is what the matrix is built with.
  ConfusionMatrix old(2, 0.25);
  old.add({{20, 0, 30, 10}}, {1}, {{20, 0, 30, 10}}, {0.1}, {1});
  CHECK(old.counts()[2][1] == 1);
  CHECK(old.counts()[1][1] == 0);
}
