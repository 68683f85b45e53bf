#!/usr/bin/env bash
# Quality gate: builds an instrumented copy in build-coverage, runs every test, and prints the
# line coverage of src/ (target: >= 90%).
# `scripts/gate.sh --acc [overrides...]` instead runs the accuracy goldens: every
# configs/acc/<name>.yaml is trained from scratch (Release build) and the final value of the
# results.csv column named in configs/acc/<name>.expect must lie within expected +/- tolerance
# (both ways: a better number is a change to explain too). Prints one pass/fail line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

# `key: value` of an .expect file.
expect_value() { sed -n "s/^$2: *//p" "$1" | head -n 1; }

# The last row's value of results.csv column $2 in file $1.
last_value() {
  awk -F, -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
                       { v = $c } END { if (c) print v; else exit 1 }' "$1"
}

if [[ "${1:-}" == "--acc" ]]; then
  shift
  build_dir=${DETRAIN_BUILD_DIR:-build}
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" -j"$(nproc)" --target detrain
  detrain="$build_dir/detrain"
  [[ -f runs/synth/synth.yaml ]] || "$detrain" data synth --out runs/synth
  mkdir -p runs/acc
  failed=0
  for config in configs/acc/*.yaml; do
    name=$(basename "$config" .yaml)
    expect="configs/acc/$name.expect"
    metric=$(expect_value "$expect" metric)
    expected=$(expect_value "$expect" expected)
    tolerance=$(expect_value "$expect" tolerance)
    rm -rf "runs/acc/$name"
    start=$SECONDS
    if ! "$detrain" train --config "$config" train.name="$name" "$@" >"runs/acc/$name.log" 2>&1 ||
       ! measured=$(last_value "runs/acc/$name/results.csv" "$metric"); then
      printf 'FAIL  %-14s the run failed; see runs/acc/%s.log\n' "$name" "$name"
      failed=1
      continue
    fi
    verdict=$(awk -v m="$measured" -v e="$expected" -v t="$tolerance" \
      'BEGIN { d = m - e; if (d < 0) d = -d; print (d <= t ? "PASS" : "FAIL") }')
    [[ $verdict == PASS ]] || failed=1
    printf '%s  %-14s %s measured %.4f, expected %s +/- %s (%d s)\n' "$verdict" "$name" \
      "$metric" "$measured" "$expected" "$tolerance" $((SECONDS - start))
  done
  exit $failed
fi

build_dir=${DETRAIN_COVERAGE_DIR:-build-coverage}
jobs=$(nproc)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDETRAIN_COVERAGE=ON >/dev/null
cmake --build "$build_dir" -j"$jobs"
find "$build_dir" -name '*.gcda' -delete
(cd "$build_dir" && ctest -j"$jobs" "$@" | tail -n 3)
echo "gate.sh: line coverage of src/"
gcovr --root . --filter 'src/' --object-directory "$build_dir" --print-summary \
  --gcov-ignore-parse-errors --exclude-unreachable-branches -s 2>/dev/null | tail -n 3
