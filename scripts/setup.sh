#!/usr/bin/env bash
# Installs the Debian packages detrain needs to build and test. Idempotent: quiet and fast when
# everything is already present. Works as root or through sudo. Nothing is downloaded except
# through apt.
set -euo pipefail

# One line per package, with why it is here.
packages=(
  cmake                  # build system
  ninja-build            # fast builds
  g++                    # compiler (C++17)
  ccache                 # warm rebuilds in CI and locally
  libtorch-dev           # tensors, autograd, nn (LibTorch 1.13 on Debian 12)
  libgloo-dev            # headers that c10d/ProcessGroupGloo.hpp includes (distributed training)
  libopenblas0-openmp    # without it Debian falls back to the reference BLAS (14-20x slower fp32 matmul)
  libopencv-dev          # image decode, warps, drawing
  libturbojpeg0-dev      # JPEG decode with DCT-domain downscaling for the loader
  nlohmann-json3-dev     # JSON (configs, results, metrics)
  libcli11-dev           # command line
  libyaml-cpp-dev        # YAML configs and model definitions
  libspdlog-dev          # logging
  catch2                 # tests (2.13, prebuilt Catch2WithMain)
  gcovr                  # line coverage in scripts/gate.sh
  clang-format           # formatting check
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup.sh: installing ${#missing[@]} Debian package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup.sh: done"
