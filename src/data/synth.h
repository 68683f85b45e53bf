// The generated "shapes" data set: deterministic images of filled shapes (rectangle, ellipse,
// triangle, cross) and stick-figure persons with 17 COCO-layout keypoints on textured, noisy
// backgrounds, written in COCO format (JPEG images, instances and person-keypoint JSON) with
// data-set descriptors for detection and pose. It stands in for COCO offline: the demo trains
// on it in minutes, and tests get real files without shared data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace detrain::data {

struct SynthOptions {
  uint64_t seed = 0;
  int64_t train_images = 512;
  int64_t val_images = 128;
  int min_side = 256;  // image width and height are drawn from [min_side, max_side]
  int max_side = 384;
  int max_objects = 5;        // objects per image: 1 .. max_objects
  double person_share = 0.4;  // probability that an object is a person
  int jpeg_quality = 90;
  int threads = 0;  // 0: every core; the output never depends on it
};

struct SynthSummary {
  std::string root;         // absolute output directory
  std::string detect_yaml;  // <root>/synth.yaml (5 classes)
  std::string pose_yaml;    // <root>/synth-pose.yaml (person with 17 keypoints)
  int64_t images = 0;       // train + val
  int64_t instances = 0;    // all objects
  int64_t persons = 0;      // person instances (with keypoints)
};

// Class names in contiguous order; COCO category ids are 1..5 (person = 1 as in COCO).
const std::vector<std::string>& synth_class_names();

// Writes the data set under `out_dir` (created if needed):
//   images/{train,val}/NNNNNN.jpg, annotations/instances_{train,val}.json,
//   annotations/person_keypoints_{train,val}.json, synth.yaml, synth-pose.yaml.
// The same options give byte-identical files. Throws IoError when the directory cannot be
// written, ConfigError for impossible options.
SynthSummary write_synth_dataset(const std::string& out_dir, const SynthOptions& options);

}  // namespace detrain::data
