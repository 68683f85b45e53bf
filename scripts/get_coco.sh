#!/usr/bin/env bash
# Downloads COCO 2017 (train/val images and the instances + person-keypoints annotations) from
# cocodataset.org into DIR (default: $DETRAIN_DATA/coco, else ../shared/data/coco), the layout
# data/coco.yaml and data/coco-pose.yaml expect:
#   DIR/images/{train2017,val2017}/*.jpg   DIR/annotations/{instances,person_keypoints}_*2017.json
# Needs ~20 GB download, ~45 GB free while unpacking. Resumes partial downloads; idempotent.
# Usage: scripts/get_coco.sh [DIR] [--val-only]
set -euo pipefail
cd "$(dirname "$0")/.."
val_only=0
dir=""
for arg in "$@"; do
  case "$arg" in
    --val-only) val_only=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) dir="$arg" ;;
  esac
done
if [[ -z "$dir" ]]; then
  if [[ -n "${DETRAIN_DATA:-}" ]]; then dir="$DETRAIN_DATA/coco"; else dir="../shared/data/coco"; fi
fi
mkdir -p "$dir/images" "$dir/annotations"
base=http://images.cocodataset.org
files=("annotations/annotations_trainval2017.zip" "zips/val2017.zip")
[[ $val_only -eq 1 ]] || files+=("zips/train2017.zip")

fetch() {  # resumable download with curl or wget
  local url=$1 out=$2
  if command -v curl >/dev/null; then curl -fL --retry 5 -C - -o "$out" "$url"
  else wget -c -O "$out" "$url"; fi
}

for f in "${files[@]}"; do
  name=$(basename "$f")
  stamp="$dir/.done-$name"
  [[ -f "$stamp" ]] && { echo "get_coco.sh: $name already unpacked"; continue; }
  echo "get_coco.sh: downloading $base/$f"
  fetch "$base/$f" "$dir/$name"
  echo "get_coco.sh: unpacking $name"
  case "$name" in
    annotations_*) unzip -q -o "$dir/$name" -d "$dir" ;;
    *) unzip -q -o "$dir/$name" -d "$dir/images" ;;
  esac
  rm -f "$dir/$name"
  touch "$stamp"
done
echo "get_coco.sh: COCO 2017 is in $dir (set DETRAIN_DATA=$(dirname "$(realpath "$dir")") for data/coco.yaml)"
