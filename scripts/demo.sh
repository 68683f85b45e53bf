#!/usr/bin/env bash
# The README's first command: installs what is missing, builds detrain (Release), generates the
# synthetic shapes data set if absent, trains YOLO26n on it on the CPU for a few minutes
# (configs/demo.yaml), and prints the COCO table of the final validation and where the run's
# plots and weights are. Extra arguments are config overrides, e.g. `scripts/demo.sh train.epochs=3`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs: no test or reference environments.
scripts/setup.sh --demo
# Its own folder: the tests-off configuration must not reconfigure a developer's build/.
build_dir=${DETRAIN_BUILD_DIR:-build-demo}
echo "demo.sh: configure + build in $build_dir"
# The configure log (LibTorch's own CMake files warn about things that do not apply here)
# is shown only when configuring fails.
mkdir -p "$build_dir"
if ! cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETRAIN_TESTS=OFF >"$build_dir/configure.log" 2>&1; then
  grep -A8 "CMake Error" "$build_dir/configure.log" >&2 || cat "$build_dir/configure.log" >&2
  exit 1
fi
cmake --build "$build_dir" -j"$(nproc)" --target detrain
detrain="$build_dir/detrain"

if [[ ! -f runs/synth/synth.yaml ]]; then
  echo "demo.sh: generating the synthetic data set in runs/synth"
  "$detrain" data synth --out runs/synth
fi

echo "demo.sh: training (configs/demo.yaml)"
"$detrain" train --config configs/demo.yaml train.exist_ok=true "$@"
run=runs/demo
echo
echo "demo.sh: results in $run: results.csv, results.png, labels.jpg, confusion_matrix*.png,"
echo "         Box*_curve.png, train_batch*.jpg, val_batch*_labels/pred.jpg, train.log,"
echo "         weights/best.ckpt (shippable) and weights/last.ckpt (resumable)"
echo "         validate again: $detrain val --weights $run/weights/best.ckpt"
