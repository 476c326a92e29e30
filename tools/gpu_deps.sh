#!/bin/sh
# gpu_deps.sh [PREFIX] — copies the build dependencies that GPU machines
# lack (Debian's libtcc-dev and libcjson-dev: libtcc.h, libtcc.a, cJSON.h,
# libcjson.so) from this machine into PREFIX (default .devdeps, which git
# ignores), as plain files (no links), for tools/gpu_check.sh there:
#
#   tools/gpu_deps.sh                          # here (tools/setup.sh first)
#   HK_DEPS_PREFIX=$PWD/.devdeps tools/gpu_check.sh --quick   # there
#
# The libraries are x86-64 Debian 12 builds; libtcc.a is linked into libhk
# and libcjson.so found through LD_LIBRARY_PATH (gpu_check sets it).
set -eu
cd "$(dirname "$0")/.."
P=${1:-.devdeps}
inc=/usr/include
lib=$(dirname "$(find /usr/lib -name libtcc.a -print -quit 2>/dev/null || true)")
cj=$(find /usr/lib -name 'libcjson.so.1' -print -quit 2>/dev/null || true)
if [ ! -f "$inc/libtcc.h" ] || [ ! -f "$inc/cjson/cJSON.h" ] ||
   [ ! -f "$lib/libtcc.a" ] || [ -z "$cj" ]; then
  echo "gpu_deps: libtcc-dev and libcjson-dev are not installed here" \
    "(tools/setup.sh installs them)" >&2
  exit 1
fi
mkdir -p "$P/include/cjson" "$P/lib"
cp "$inc/libtcc.h" "$P/include/"
cp "$inc/cjson/cJSON.h" "$P/include/cjson/"
cp "$lib/libtcc.a" "$P/lib/"
for n in libcjson.so libcjson.so.1; do cp -L "$cj" "$P/lib/$n"; done
echo "gpu_deps: $P ready ($(du -sh "$P" | cut -f1)); on the GPU machine," \
  "from the repository root: HK_DEPS_PREFIX=$P tools/gpu_check.sh"
