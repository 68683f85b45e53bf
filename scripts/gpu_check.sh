#!/usr/bin/env bash
# One call on the GPU machine: configure and build detrain against the machine's CUDA LibTorch
# (Python torch's CMake package: the same torch 2.11 wheel, DETRAIN_CUDA=ON, that every CPU build
# and CI compile and link) and .gpu_bundle/ (scripts/gpu_bundle.sh), run the [gpu] and
# [cuda-build] tests,
# then `bench optim` and (when the tree has it) `bench step` in fresh processes alternating
# MuSGD bucketing exact / off (ABBA, 5 pairs, one warm-up process first and excluded), and a
# 2-rank NCCL training where the machine has two GPUs (a note where it has one).
# Writes env.txt, build/test logs, raw/*.json and summary.md under $OUT (default ./gpu_check_out).
# Phases have their own time limits so the whole call stays well under 10 minutes.
# GPU_CHECK_DRY=1 (CPU machine): reuses ./build, device cpu, one pair, to test the script itself.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/gpu_check_out}"
BUNDLE="$ROOT/.gpu_bundle"
BUILD="$ROOT/build-cuda"
PAIRS="${PAIRS:-5}"
BUDGET_S="${BUDGET_S:-530}"  # bench processes start only before this many seconds have passed
RUN_S=90                     # limit of one bench process
DEVICE=cuda
EXTRA=()
if [ "${GPU_CHECK_DRY:-0}" = 1 ]; then BUILD="$ROOT/build" PAIRS=1 DEVICE=cpu EXTRA=(--steps 1) RUN_S=400 BUDGET_S=2000; fi
mkdir -p "$OUT/raw"
SUMMARY="$OUT/summary.md"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
phase() { echo "== $* ($(date -u +%T))"; }

[ -d "$BUNDLE/lib" ] || { note "FAIL: $BUNDLE missing: run scripts/gpu_bundle.sh on the Debian machine and carry .gpu_bundle"; exit 2; }
# Belt and braces for the DT_RPATH the build sets (DETRAIN_BUNDLE_DIR): children see it too.
[ "${GPU_CHECK_DRY:-0}" = 1 ] ||
  export LD_LIBRARY_PATH="$BUNDLE/lib:$BUNDLE/lib/stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${DETRAIN_DATA:-}" ] && [ -d "$BUNDLE/data/coco-mini" ]; then export DETRAIN_DATA="$BUNDLE/data"; fi

phase environment
{
  head -2 /etc/os-release; ldd --version | head -1; g++ --version | head -1; cmake --version | head -1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI)'
  echo "nproc $(nproc); DETRAIN_DATA=${DETRAIN_DATA:-unset}"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# The carried Debian 12 libraries need glibc >= 2.34 and GCC 12's libstdc++ (GLIBCXX_3.4.30).
LIBSTDCXX="$(g++ -print-file-name=libstdc++.so.6 2>/dev/null)"
if [ -f "$LIBSTDCXX" ] && ! grep -qa GLIBCXX_3.4.30 "$(readlink -f "$LIBSTDCXX")"; then
  note "WARNING: $LIBSTDCXX lacks GLIBCXX_3.4.30; the bundle's libraries will not load"
fi

if [ "${GPU_CHECK_DRY:-0}" != 1 ]; then
TORCH_PREFIX="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')"
phase configure
CUDA_FLAGS=()
if command -v nvcc >/dev/null; then CUDA_FLAGS+=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc)"); fi
if ! timeout 120 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETRAIN_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$BUNDLE" -DDETRAIN_BUNDLE_DIR="$BUNDLE" "${CUDA_FLAGS[@]}" >"$OUT/configure.log" 2>&1; then
  tail -30 "$OUT/configure.log"; note "FAIL: configure (configure.log)"; exit 1
fi
grep "detrain:" "$OUT/configure.log"

phase build
if ! timeout 330 ninja -C "$BUILD" -j"$(nproc)" detrain detrain_tests >"$OUT/build.log" 2>&1; then
  grep -m5 -B2 -A8 "error" "$OUT/build.log"; tail -5 "$OUT/build.log"; note "FAIL: build (build.log)"; exit 1
fi
# detrain-torch links LibTorch (and its CUDA part); the front end detrain must link neither.
for exe in detrain detrain-torch; do
  if ldd "$BUILD/$exe" | grep "not found"; then note "FAIL: unresolved libraries ($exe)"; exit 1; fi
done
ldd "$BUILD/detrain-torch" | grep -E "gpu_bundle|torch_cuda|libc10_cuda" >"$OUT/ldd.txt"
if ldd "$BUILD/detrain" | grep -E "libtorch|libc10|libopencv"; then
  note "FAIL: the front end detrain links LibTorch or OpenCV"; exit 1
fi
note "build: ok ($(grep -c "Building" "$OUT/build.log") units)"
fi

phase "[gpu] tests"
timeout 150 "$BUILD/detrain_tests" "[gpu],[cuda-build]" >"$OUT/gpu_tests.log" 2>&1
TESTS_RC=$?
# The front end reports the build; detrain-torch asks CUDA for its devices.
"$BUILD/detrain" --version | tee -a "$OUT/env.txt"
"$BUILD/detrain-torch" --version | sed -n 2p | tee -a "$OUT/env.txt"
# On the GPU machine a skipped [gpu] test means CUDA was not usable: that is a failure here.
if [ "${GPU_CHECK_DRY:-0}" != 1 ] && grep -q "SKIPPED" "$OUT/gpu_tests.log"; then
  note "FAIL: [gpu] tests skipped: $(grep -m1 SKIPPED "$OUT/gpu_tests.log")"
  TESTS_RC=1
fi
tail -25 "$OUT/gpu_tests.log"
note "[gpu] tests: rc $TESTS_RC ($(grep -E "^test cases" "$OUT/gpu_tests.log"))"

# abba KIND ARGS...: a warm-up process, then PAIRS pairs exact,off,off,exact,... each a fresh
# process writing raw/KIND_NN_MODE.json.
abba() {
  local kind="$1"; shift
  [ "$SECONDS" -lt "$BUDGET_S" ] || { note "$kind: time budget (${BUDGET_S} s) spent; not run"; return 1; }
  timeout "$RUN_S" "$BUILD/detrain" bench "$kind" "$@" optim.bucketing=exact --json >"$OUT/raw/${kind}_warmup.json" 2>"$OUT/raw/${kind}_warmup.err" ||
    { note "$kind: warm-up failed: $(tail -2 "$OUT/raw/${kind}_warmup.err")"; return 1; }
  local i=0 mode
  for ((p = 0; p < PAIRS; ++p)); do
    for mode in $([ $((p % 2)) = 0 ] && echo "exact off" || echo "off exact"); do
      i=$((i + 1))
      if [ "$SECONDS" -ge "$BUDGET_S" ]; then note "$kind: time budget (${BUDGET_S} s) spent after $((i - 1)) runs"; return 1; fi
      timeout "$RUN_S" "$BUILD/detrain" bench "$kind" "$@" optim.bucketing="$mode" --json \
        >"$OUT/raw/$(printf '%s_%02d_%s' "$kind" "$i" "$mode").json" 2>>"$OUT/raw/$kind.err" ||
        note "$kind run $i ($mode) failed"
    done
  done
}

phase "bench optim"
abba optim --device "$DEVICE" "${EXTRA[@]}"
phase "bench step"
if "$BUILD/detrain" bench --help 2>/dev/null | grep -qE '^ +step '; then
  abba step --device "$DEVICE" --model models/yolo26.yaml --scale n --batch 4 --imgsz 640 --data data/coco-mini.yaml
else
  note "bench step: not in this tree (not listed by detrain bench --help); skipped"
fi

phase "2 ranks, NCCL"
# NCCL refuses two ranks on one GPU, so the 2-process run needs two devices; with one it is a
# note, never a pass. The run is a short coco-mini training through --nproc 2 (the reducer's
# bucketed all-reduce over NCCL), its log kept as nccl.log.
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU ")
if [ "${GPU_CHECK_DRY:-0}" = 1 ]; then
  note "2 ranks, NCCL: dry run on the CPU; not run"
elif [ "$GPUS" -lt 2 ]; then
  note "2 ranks, NCCL: not run ($GPUS GPU here; NCCL needs one GPU per rank)"
elif [ "$SECONDS" -ge "$BUDGET_S" ]; then
  note "2 ranks, NCCL: time budget (${BUDGET_S} s) spent; not run"
else
  timeout 120 "$BUILD/detrain" train --nproc 2 -c configs/coco-mini.yaml runtime.device=cuda \
    train.epochs=1 data.batch=8 data.imgsz=320 train.project="$OUT/nccl-run" >"$OUT/nccl.log" 2>&1
  note "2 ranks, NCCL: rc $? ($(grep -m1 -oE "all-reduce[^;]*" "$OUT/nccl.log" || echo "see nccl.log"))"
fi

phase summary
python3 - "$OUT" >>"$SUMMARY" <<'EOF'
# Median and range over the fresh processes: for `optim` every process times all three
# optimizers (its bucketing override is moot), for `step` each mode has its own processes.
import glob, json, os, statistics, sys
out = sys.argv[1]
def load(kind):
    runs = []
    for f in sorted(glob.glob(os.path.join(out, "raw", f"{kind}_[0-9]*.json"))):
        try:
            # `bench step` runs the trainer, whose log lines come before the JSON document.
            text = open(f).read()
            start = min([i for i in (text.find("\n["), text.find("\n{")) if i >= 0] or [0])
            doc = json.loads(text[start:])
            if isinstance(doc, list):  # bench step: one row per precision, format and rank count
                doc = {"-".join(str(r.get(k, "")) for k in ("precision", "memory_format", "nproc")): r for r in doc}
            runs.append((f.rsplit("_", 1)[1][:-5], doc))
        except Exception as e:
            print(f"- {os.path.basename(f)}: unreadable ({e})")
    return runs
def cell(xs, f=".3f"):
    return f"{statistics.median(xs):{f}} ({min(xs):{f}}-{max(xs):{f}})" if xs else "-"
optim = load("optim")
if optim:
    print(f"\n## bench optim on {optim[0][1].get('device')}: {len(optim)} processes, median (range) of per-process medians, ms\n")
    print("| optimizer | step ms | vs sgd |\n| --- | --- | --- |")
    by = {}
    for _, r in optim:
        for o in r["optimizers"]:
            by.setdefault(o["name"], []).append(o["median_ms"])
    sgd = statistics.median(by.get("sgd", [float("nan")]))
    for name, xs in by.items():
        print(f"| {name} | {cell(xs)} | {statistics.median(xs) / sgd:.2f}x |")
    print(f"\nmax |param exact - off|: {cell([r['exact_vs_off_max_abs_param_diff'] for _, r in optim], '.3g')}")
step = load("step")
if step:
    print(f"\n## bench step (yolo26n, batch 4, 640 px): {len(step)} processes, median (range)\n")
    def flat(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from flat(v, prefix + k + ".")
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                yield prefix + k, float(v)
    modes = sorted({m for m, _ in step})
    keys = []
    for _, r in step:
        keys += [k for k, _ in flat(r) if k not in keys]
    print("| metric | " + " | ".join(modes) + " |\n| --- |" + " --- |" * len(modes))
    for k in keys:
        row = [cell([dict(flat(r)).get(k) for m2, r in step if m2 == m and k in dict(flat(r))]) for m in modes]
        print(f"| {k} | " + " | ".join(row) + " |")
EOF
cat "$SUMMARY"
exit "$TESTS_RC"
