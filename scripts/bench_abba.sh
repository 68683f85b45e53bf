#!/usr/bin/env bash
# Side-by-side timing of two detrain binaries (two LibTorch builds, two commits) in one run:
# fresh processes in the order A B B A, repeated --pairs times, each `detrain bench ... --json`.
# Prints, per row of the bench's JSON (precision / rank count), the median of the per-process
# medians for A and B, their ranges and B/A. Load average is printed before and after: a busy
# machine slows both sides, which the alternation spreads evenly but does not remove.
#
# Usage: scripts/bench_abba.sh [--pairs N] [--out DIR] A_BINARY B_BINARY -- BENCH_ARGS...
#        scripts/bench_abba.sh --summary DIR   (the table of an earlier run's raw folder)
#   e.g. scripts/bench_abba.sh build-1.13/detrain build/detrain -- step --imgsz 320 --batch 8 \
#          --data data/coco-mini.yaml --steps 6 --warmup 2 --precision fp32
set -euo pipefail
pairs=2
out=""

# The table of a folder of raw runs (NN_A.json / NN_B.json).
summarize() {
  python3 - "$1" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}  # row label -> side -> [median_ms]
for f in sorted(glob.glob(os.path.join(out, "*_[AB].json"))):
    side = f[-6]
    text = open(f).read()
    # `bench step` runs the trainer, whose log lines may precede the JSON document.
    start = min(i for i in (text.find("\n["), text.find("\n{"), 0 if text[:1] in "[{" else -1) if i >= 0)
    data = json.loads(text[start:])
    for r in data if isinstance(data, list) else [data]:
        label = " ".join(f"{k}={r[k]}" for k in ("precision", "runs_as", "memory_format", "nproc") if k in r)
        rows.setdefault(label, {}).setdefault(side, []).append(r["median_ms"])
def cell(xs):
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"
print("| row | A median ms (range) | B median ms (range) | B/A |")
print("| --- | --- | --- | --- |")
for label, sides in rows.items():
    a, b = sides.get("A", []), sides.get("B", [])
    ratio = statistics.median(b) / statistics.median(a) if a and b else float("nan")
    print(f"| {label} | {cell(a) if a else '-'} | {cell(b) if b else '-'} | {ratio:.2f} |")
EOF
}
if [[ "${1:-}" == "--summary" ]]; then summarize "$2"; exit 0; fi

while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --pairs) pairs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 3 ]] || { echo "usage: scripts/bench_abba.sh [--pairs N] [--out DIR] A B -- BENCH_ARGS..." >&2; exit 2; }
a="$1" b="$2"
shift 2
[[ "${1:-}" == "--" ]] && shift
for bin in "$a" "$b"; do [[ -x "$bin" ]] || { echo "bench_abba.sh: $bin is not an executable" >&2; exit 2; }; done
out="${out:-$(mktemp -d -t detrain-abba-XXXXXX)}"
mkdir -p "$out"

echo "bench_abba.sh: A = $a ($("$a" --version | sed -n 2p))"
echo "bench_abba.sh: B = $b ($("$b" --version | sed -n 2p))"
echo "bench_abba.sh: bench $*; $pairs pair(s) A B B A; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for ((p = 0; p < pairs; ++p)); do
  for side in A B B A; do
    i=$((i + 1))
    bin="$a"; [[ $side == B ]] && bin="$b"
    file="$out/$(printf '%02d' $i)_$side.json"
    if ! "$bin" bench "$@" --json >"$file" 2>"$file.err"; then
      echo "bench_abba.sh: run $i ($side) failed: $(tail -1 "$file.err")" >&2
      exit 1
    fi
  done
done
echo "bench_abba.sh: load after: $(cut -d' ' -f1-3 /proc/loadavg); raw JSON in $out"

summarize "$out"
