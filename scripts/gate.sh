#!/usr/bin/env bash
# Quality gate: builds an instrumented copy in build-coverage, runs every test, and prints the
# line coverage of src/ (target: >= 90%). Later stages (accuracy goldens with --acc) extend it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${DETRAIN_COVERAGE_DIR:-build-coverage}
jobs=$(nproc)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDETRAIN_COVERAGE=ON >/dev/null
cmake --build "$build_dir" -j"$jobs"
find "$build_dir" -name '*.gcda' -delete
(cd "$build_dir" && ctest -j"$jobs" "$@" | tail -n 3)
echo "gate.sh: line coverage of src/"
gcovr --root . --filter 'src/' --object-directory "$build_dir" --print-summary \
  --gcov-ignore-parse-errors --exclude-unreachable-branches -s 2>/dev/null | tail -n 3
