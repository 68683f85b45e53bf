// The front end's `detrain data`: `stats` runs here; preview, synth and `stats --check-images`
// (decoding images takes OpenCV) are handed to detrain-torch.
#pragma once

#include <CLI/CLI.hpp>

#include "../commands.h"

namespace detrain::cli {

Command add_front_data_command(CLI::App& root);

}  // namespace detrain::cli
