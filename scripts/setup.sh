#!/usr/bin/env bash
# Installs what detrain needs to build and test: Debian packages through apt, and the PyPI torch
# wheel (CUDA-enabled LibTorch 2.x, its CMake package inside) into a project-local virtual
# environment. Idempotent: quiet and fast when everything is already present. Works as root or
# through sudo. Nothing is downloaded except through apt and pip.
# Environment: DETRAIN_TORCH_VENV (default .venv), DETRAIN_TORCH_VERSION (default 2.11.0: the
# version the lent GPU machines carry, with CUDA 13).
# `setup.sh --demo` installs only what building and running detrain needs (Debian packages and
# the torch wheel): scripts/demo.sh uses it. Without it the test environments follow (.venv-test:
# onnx, onnxruntime, tensorboard; .venv-ref: the Python reference and the COCO evaluators).
set -euo pipefail
demo_only=0
if [[ "${1:-}" == "--demo" ]]; then
  demo_only=1
elif [[ $# -gt 0 ]]; then
  echo "setup.sh: unknown argument '$1' (the only one is --demo: what the demo needs, no test environments)" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${DETRAIN_TORCH_VENV:-$root/.venv}"
torch_version="${DETRAIN_TORCH_VERSION:-2.11.0}"

# One line per package, with why it is here.
packages=(
  cmake                  # build system
  ninja-build            # fast builds
  g++                    # compiler (C++17)
  ccache                 # warm rebuilds in CI and locally
  libgloo-dev            # gloo headers that c10d/ProcessGroupGloo.hpp includes (the wheel has none)
  iproute2               # `ip netns` for the two-host distributed test
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

# The virtual environment that carries the torch wheel needs `python3 -m venv`; a Python that is
# not Debian's (pyenv, conda) brings its own, Debian's comes in python3-venv.
if ! { command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null; }; then
  packages+=(python3 python3-venv)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
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
fi

# The torch wheel. Present and of the pinned version: nothing to do (a directory check, no
# Python start-up). A venv whose interpreter no longer runs (its Python was removed or moved)
# is rebuilt, saying so.
have_pinned_torch() {
  compgen -G "$venv/lib/python3*/site-packages/torch-$torch_version.dist-info" >/dev/null &&
    compgen -G "$venv/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake" >/dev/null
}
if [[ -d "$venv" ]] && ! "$venv/bin/python" -c '' 2>/dev/null; then
  echo "setup.sh: $venv is broken (its python does not run); rebuilding it"
  rm -rf "$venv"
fi
if ! have_pinned_torch; then
  if [[ ! -d "$venv" ]]; then
    echo "setup.sh: creating the virtual environment $venv"
    python3 -m venv "$venv"
  fi
  echo "setup.sh: installing torch==$torch_version (CUDA-enabled wheel, about 4.5 GB with its CUDA libraries) into $venv"
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$torch_version"; then
    echo "setup.sh: pip could not install torch==$torch_version into $venv; check the network to PyPI, then run scripts/setup.sh again" >&2
    exit 1
  fi
  have_pinned_torch || { echo "setup.sh: torch==$torch_version installed into $venv but its CMake package is missing (TorchConfig.cmake); remove $venv and run scripts/setup.sh again" >&2; exit 1; }
  echo "setup.sh: done"
fi

[[ $demo_only -eq 1 ]] && exit 0

# ---- test-only runtimes: `detrain export` (tests/export) and TensorBoard files (tests/report) --
# onnx (checker) and onnxruntime, which nobody here wrote, check the exported ONNX files;
# tensorboard's own reader (EventAccumulator) reads back the event files a run writes. They
# live in their own environment, .venv-test, so the torch venv stays as pinned; the export tests
# skip visibly when it is missing. DETRAIN_TEST_VENV picks another folder.
test_venv="${DETRAIN_TEST_VENV:-$root/.venv-test}"
test_pins=(onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4 tensorboard==2.18.0)
if ! { [[ -x "$test_venv/bin/python" ]] &&
       "$test_venv/bin/python" -c 'import onnx, onnxruntime, numpy, tensorboard' 2>/dev/null; }; then
  echo "setup.sh: creating the test environment $test_venv (${test_pins[*]})"
  python3 -m venv "$test_venv"
  if ! "$test_venv/bin/python" -m pip install -q --disable-pip-version-check "${test_pins[@]}"; then
    echo "setup.sh: pip could not install ${test_pins[*]} into $test_venv; check the network to PyPI, then run scripts/setup.sh again" >&2
    exit 1
  fi
fi

# ---- the Python reference: Ultralytics 8.4.190 (tests/golden) --------------------------------
# The parity goldens are generated at build time by tests/golden/*.py running the pinned
# reference on CPU. Its environment, .venv-ref, reuses the torch of $venv through a .pth path
# file (no second 4.5 GB download) and adds ultralytics and the torchvision that matches torch
# 2.11 (unpinned, pip would upgrade torch), plus safetensors for the test that loads detrain's
# exported weights into the reference. DETRAIN_REF_VENV picks another folder.
ref_venv="${DETRAIN_REF_VENV:-$root/.venv-ref}"
# onnx and onnxruntime: Ultralytics loads ONNX files with them (YOLO("x.onnx"), the tests of
# detrain's export in Ultralytics' hands); without them it would try to pip-install them itself.
ref_pins=(ultralytics==8.4.190 torchvision==0.26.0 safetensors==0.6.2 onnx==1.17.0 onnxruntime==1.20.1 "torch==$torch_version")
# Complete when every pin but torch (which comes from $venv) has its dist-info, so that a folder
# made before a pin was added gets it.
ref_complete() {
  [[ -x "$ref_venv/bin/python" ]] || return 1
  local pin name
  for pin in "${ref_pins[@]}"; do
    [[ $pin == torch==* ]] && continue
    name=${pin%%==*}
    compgen -G "$ref_venv/lib/python3*/site-packages/${name//-/_}-${pin#*==}.dist-info" >/dev/null || return 1
  done
}
if ! ref_complete; then
  echo "setup.sh: making or completing the reference environment $ref_venv (${ref_pins[*]})"
  [[ -x "$ref_venv/bin/python" ]] || python3 -m venv "$ref_venv"
  torch_site=$(compgen -G "$venv/lib/python3*/site-packages" | head -1)
  ref_site=$(compgen -G "$ref_venv/lib/python3*/site-packages" | head -1)
  echo "$torch_site" >"$ref_site/detrain-torch.pth"
  if ! "$ref_venv/bin/python" -m pip install -q --disable-pip-version-check "${ref_pins[@]}"; then
    echo "setup.sh: pip could not install ${ref_pins[*]} into $ref_venv; check the network to PyPI, then run scripts/setup.sh again" >&2
    exit 1
  fi
fi

# ---- reference COCO evaluators for `detrain bench eval` --------------------------------------
# hotcoco and faster-coco-eval, which nobody here wrote, are timed beside detrain's evaluator in
# the same bench run (their rows appear only where they are installed). They go into .venv-ref,
# whose Python the bench finds beside the build folder.
eval_pins=(hotcoco==1.3.0 faster-coco-eval==1.8.0)
if ! { compgen -G "$ref_venv/lib/python3*/site-packages/hotcoco-1.3.0.dist-info" >/dev/null &&
       compgen -G "$ref_venv/lib/python3*/site-packages/faster_coco_eval-1.8.0.dist-info" >/dev/null; }; then
  echo "setup.sh: installing the reference COCO evaluators (${eval_pins[*]}) into $ref_venv"
  if ! "$ref_venv/bin/python" -m pip install -q --disable-pip-version-check "${eval_pins[@]}"; then
    echo "setup.sh: pip could not install ${eval_pins[*]} into $ref_venv; check the network to PyPI, then run scripts/setup.sh again" >&2
    exit 1
  fi
fi
