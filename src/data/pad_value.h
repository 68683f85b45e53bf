// The grey every augmentation pads with: letterbox borders, the mosaic canvas and the border of
// the affine warp. The reference writes 114 in each of them (LetterBox, Mosaic,
// RandomPerspective); one constant here so that they cannot drift apart.
#pragma once

#include <cstdint>

namespace detrain::data {

constexpr uint8_t kPadGrey = 114;

}  // namespace detrain::data
