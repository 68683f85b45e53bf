#!/usr/bin/env bash
# The README's test command: installs what is missing, configures (Release), builds and runs
# every test with ctest, ending with ctest's summary line. Extra arguments go to ctest
# (e.g. `scripts/test.sh -L unit`, `scripts/test.sh -LE slow`).
# Environment: DETRAIN_BUILD_DIR (default build), DETRAIN_TEST_JOBS (default: cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${DETRAIN_BUILD_DIR:-build}
jobs=$(nproc)
echo "test.sh: configure + build in $build_dir ($jobs jobs)"
# The configure log (LibTorch's own CMake files warn about things that do not apply here)
# is shown only when configuring fails.
mkdir -p "$build_dir"
if ! cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$build_dir/configure.log" 2>&1; then
  grep -A8 "CMake Error" "$build_dir/configure.log" >&2 || cat "$build_dir/configure.log" >&2
  exit 1
fi
cmake --build "$build_dir" -j"$jobs"
cd "$build_dir"
exec ctest --output-on-failure -j"${DETRAIN_TEST_JOBS:-$jobs}" "$@"
