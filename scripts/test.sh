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
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j"$jobs"
cd "$build_dir"
exec ctest --output-on-failure -j"${DETRAIN_TEST_JOBS:-$jobs}" "$@"
