#!/usr/bin/env bash
# Collects what the GPU machine lacks (OpenCV core/imgproc/imgcodecs, libturbojpeg, yaml-cpp,
# spdlog, fmt, TBB, and the header-only CLI11, nlohmann-json, gloo (the c10d Gloo headers the torch
# wheel lacks), Catch2 2 with its prebuilt main)
# from this Debian machine into .gpu_bundle/ (lib/, include/, lib/cmake/, share/cmake/).
# Deliberate difference from "copy the ldd closure": imgcodecs' closure (GDAL, GDCM, OpenEXR,
# TIFF, OpenJPEG: ~220 MB) and core's LAPACK/BLAS/GLX are replaced by generated stub libraries
# that carry the same SONAMEs and symbol versions and abort with a message if ever called; the
# project only decodes JPEG/PNG/WebP and writes JPEG/PNG, and OpenCV calls LAPACK/BLAS only for
# matrices far larger than any the project builds.
#
# Usage: scripts/gpu_bundle.sh [OUT_DIR]   (default .gpu_bundle; prints the size at the end)
# Stubs live in lib/stubs so a build here can leave them off its rpath (Debian's own LibTorch
# needs the real LAPACK/BLAS); a GPU build puts lib and lib/stubs on a transitive DT_RPATH.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/.gpu_bundle}"
ARCH_LIB=/usr/lib/x86_64-linux-gnu
rm -rf "$OUT"
mkdir -p "$OUT/lib/cmake" "$OUT/lib/stubs" "$OUT/include" "$OUT/share/cmake" "$OUT/stub-src"

# Real libraries (by SONAME link in $ARCH_LIB). libz, glibc and the GCC runtime are assumed on
# the GPU machine (its Python needs them); libgomp is carried because only torch's hashed copy
# is guaranteed there.
REAL=(libopencv_core.so.406 libopencv_imgproc.so.406 libopencv_imgcodecs.so.406 libtbb.so.12
  libjpeg.so.62 libpng16.so.16 libwebp.so.7 libturbojpeg.so.0 libyaml-cpp.so.0.7
  libspdlog.so.1.10 libfmt.so.9 libgomp.so.1)
# Dependencies replaced by stubs (see the header).
STUB=(libGLX.so.0 liblapack.so.3 libblas.so.3 libgdal.so.32 libgdcmMSFF.so.3.0
  libgdcmDSED.so.3.0 libtiff.so.6 libopenjp2.so.7 libOpenEXR-3_1.so.30)
BASE_RE='^(linux-vdso|ld-linux|libc\.|libm\.|libpthread|libdl\.|librt\.|libstdc\+\+|libgcc_s|libz\.)'

copy_lib() {  # SONAME: the real file plus its SONAME and linker-name links
  local soname="$1" real
  real="$(readlink -f "$ARCH_LIB/$soname")"
  cp "$real" "$OUT/lib/"
  [ "$(basename "$real")" = "$soname" ] || ln -sf "$(basename "$real")" "$OUT/lib/$soname"
  ln -sf "$soname" "$OUT/lib/${soname%%.so*}.so"
}
for so in "${REAL[@]}"; do copy_lib "$so"; done

# Stubs: every dynamic symbol some bundled library imports from the stubbed one, with the
# stubbed library's version node, defined as a function that aborts with its name.
for so in "${STUB[@]}"; do
  real="$(readlink -f "$ARCH_LIB/$so")"
  tag="$(echo "${so%%.so*}" | tr -c 'A-Za-z0-9\n' '_')"
  src="$OUT/stub-src/$tag.c" map="$OUT/stub-src/$tag.map"
  # "symbol version" pairs the stubbed library defines.
  objdump -T "$real" | awk '/^[0-9a-f]+ / && !/\*UND\*/ {v=$(NF-1); gsub(/[()]/,"",v); print $NF, v}' |
    sort -u >"$OUT/stub-src/$tag.defs"
  for cons in "$OUT"/lib/*.so.*; do
    [ -L "$cons" ] && continue
    objdump -T "$cons" | awk '/\*UND\*/ {print $NF}'
  done | sort -u >"$OUT/stub-src/$tag.wanted"
  awk 'NR==FNR {w[$1]=1; next} ($1 in w)' "$OUT/stub-src/$tag.wanted" "$OUT/stub-src/$tag.defs" \
    >"$OUT/stub-src/$tag.used"
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo "static void stubbed(const char* name) { fprintf(stderr, \"detrain GPU bundle: %s from $so is a stub (not carried)\\n\", name); abort(); }"
    awk '{printf "void %s(void) { stubbed(\"%s\"); }\n", $1, $1}' "$OUT/stub-src/$tag.used"
  } >"$src"
  if awk '$2 != "Base" && $2 != "*ABS*"' "$OUT/stub-src/$tag.used" | grep -q .; then
    awk '{ by[$2] = by[$2] "  " $1 ";\n" } END { for (v in by) if (v != "Base") printf "%s {\n global:\n%s};\n", v, by[v] }' \
      "$OUT/stub-src/$tag.used" >"$map"
    vs=(-Wl,--version-script="$map")
  else
    vs=()
  fi
  gcc -shared -fPIC -O1 -w -o "$OUT/lib/stubs/$so" -Wl,-soname,"$so" "${vs[@]}" "$src"
  echo "stub $so: $(wc -l <"$OUT/stub-src/$tag.used") symbols"
done

# Every NEEDED entry of a bundled library is bundled or in the base set, and every library loads
# with all its symbols bound (LD_BIND_NOW) from the bundle alone.
missing=0
for f in "$OUT"/lib/*.so.*; do
  [ -L "$f" ] && continue
  for need in $(readelf -d "$f" | awk '/NEEDED/ {gsub(/[\[\]]/,"",$5); print $5}'); do
    if [ ! -e "$OUT/lib/$need" ] && [ ! -e "$OUT/lib/stubs/$need" ] && ! [[ "$need" =~ $BASE_RE ]]; then
      echo "MISSING: $(basename "$f") needs $need" >&2
      missing=1
    fi
  done
  if command -v python3 >/dev/null && ! err="$(LD_LIBRARY_PATH="$OUT/lib:$OUT/lib/stubs" LD_BIND_NOW=1 \
    python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$f" 2>&1)"; then
    echo "UNLOADABLE: $(basename "$f"): ${err##*$'\n'}" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1

# Headers.
cp -r /usr/include/yaml-cpp /usr/include/spdlog /usr/include/fmt /usr/include/nlohmann /usr/include/gloo \
  /usr/include/CLI /usr/include/catch2 /usr/include/turbojpeg.h "$OUT/include/"
mkdir -p "$OUT/include/opencv4/opencv2"
for m in core imgproc imgcodecs; do cp -r "/usr/include/opencv4/opencv2/$m" "/usr/include/opencv4/opencv2/$m.hpp" \
  "$OUT/include/opencv4/opencv2/"; done
cp /usr/include/opencv4/opencv2/opencv_modules.hpp "$OUT/include/opencv4/opencv2/"
cp -r /usr/include/x86_64-linux-gnu/opencv4 "$OUT/include/opencv4-arch" 2>/dev/null || true

# CMake packages. Debian's multiarch configs sit in lib/x86_64-linux-gnu/cmake (4 levels below
# the prefix); here they sit in lib/cmake (3 levels), so drop one level and the arch path.
for pkg in yaml-cpp spdlog fmt; do
  cp -r "$ARCH_LIB/cmake/$pkg" "$OUT/lib/cmake/"
  for f in "$OUT/lib/cmake/$pkg"/*.cmake; do
    sed -i -e 's#lib/x86_64-linux-gnu/#lib/#g' -e 's#/\.\./\.\./\.\./\.\./"#/../../../"#' "$f"
    awk '/get_filename_component\(_IMPORT_PREFIX "\$\{_IMPORT_PREFIX\}" PATH\)/ && !dropped {dropped=1; next} {print}' \
      "$f" >"$f.tmp" && mv "$f.tmp" "$f"
  done
done
cp -r /usr/lib/cmake/Catch2 "$OUT/lib/cmake/"
cp /usr/lib/libCatch2WithMain.a "$OUT/lib/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$OUT/share/cmake/"
# OpenCV's own config imports every module (dnn, highgui, ...) and checks their files exist;
# a small config with just the three carried modules stands in for it.
mkdir -p "$OUT/lib/cmake/opencv4"
cat >"$OUT/lib/cmake/opencv4/OpenCVConfig.cmake" <<'EOF'
# Generated by scripts/gpu_bundle.sh: OpenCV core, imgproc and imgcodecs from the bundle.
get_filename_component(_ocv_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(OpenCV_VERSION 4.6.0)
set(OpenCV_INCLUDE_DIRS "${_ocv_prefix}/include/opencv4")
set(OpenCV_LIBS opencv_core opencv_imgproc opencv_imgcodecs)
foreach(_m core imgproc imgcodecs)
  if(NOT TARGET opencv_${_m})
    add_library(opencv_${_m} SHARED IMPORTED)
    set_target_properties(opencv_${_m} PROPERTIES
      IMPORTED_LOCATION "${_ocv_prefix}/lib/libopencv_${_m}.so.406"
      INTERFACE_INCLUDE_DIRECTORIES "${_ocv_prefix}/include/opencv4")
  endif()
endforeach()
set(OpenCV_FOUND TRUE)
EOF
printf 'set(PACKAGE_VERSION 4.6.0)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' \
  >"$OUT/lib/cmake/opencv4/OpenCVConfigVersion.cmake"

# coco-mini (22 MB) for `bench step` on the GPU machine, which has no copy of the shared data.
DATA_SRC="${DETRAIN_DATA:-$ROOT/../shared/data}/coco-mini"
if [ -d "$DATA_SRC" ]; then
  mkdir -p "$OUT/data" && cp -r "$DATA_SRC" "$OUT/data/"
else
  echo "note: $DATA_SRC not found; bench step on the GPU machine will lack data" >&2
fi

# What the carried libraries need from the GPU machine's glibc / libstdc++ (check there).
echo "newest symbol versions required: $(for f in "$OUT"/lib/*.so.* "$OUT"/lib/stubs/*.so.*; do [ -L "$f" ] || objdump -T "$f"; done |
  grep -o -E '\((GLIBC|GLIBCXX|CXXABI)_[0-9.]+\)' | tr -d '()' | sort -t_ -k1,1 -k2,2V -u |
  awk -F_ '{last[$1]=$0} END {for (k in last) printf "%s ", last[k]}')"
rm -rf "$OUT/stub-src"
echo "bundle: $OUT $(du -sh "$OUT" | cut -f1) ($(du -sb "$OUT" | cut -f1) bytes)"
