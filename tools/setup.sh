#!/bin/sh
# setup.sh — install what hk needs to build and test, from Debian's packages.
# Installs only what is missing; prints what it would do and why it cannot
# when it is neither root nor able to use sudo. Used by tools/demo.sh and
# tools/test.sh, so a fresh Debian machine needs nothing else.
set -eu

# package:command-or-file that proves it is there
NEED="
cmake:/usr/bin/cmake
make:/usr/bin/make
ninja-build:/usr/bin/ninja
gcc:/usr/bin/gcc
clang:/usr/bin/clang
pkg-config:/usr/bin/pkg-config
libcjson-dev:/usr/include/cjson/cJSON.h
libtcc-dev:/usr/include/libtcc.h
tcc:/usr/bin/tcc
python3-numpy:/usr/lib/python3/dist-packages/numpy/__init__.py
python3-jsonschema:/usr/lib/python3/dist-packages/jsonschema/__init__.py
g++:/usr/bin/g++
libbenchmark-dev:/usr/include/benchmark/benchmark.h
gnuplot-nox:/usr/bin/gnuplot
python3-dev:/usr/bin/python3-config
python3-pytest:/usr/lib/python3/dist-packages/pytest/__init__.py
python3-setuptools:/usr/lib/python3/dist-packages/setuptools/__init__.py
python3-pip:/usr/lib/python3/dist-packages/pip/__init__.py
python3-venv:/usr/share/doc/python3-venv
"

missing=""
for entry in $NEED; do
  pkg=${entry%%:*}
  path=${entry#*:}
  [ -e "$path" ] || missing="$missing $pkg"
done

if [ -z "$missing" ]; then
  exit 0
fi

echo "hk setup: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "hk setup: cannot install packages: not root and no sudo." >&2
  echo "hk setup: as root, run: apt-get update && apt-get install -y$missing" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "hk setup: apt-get not found: hk's setup expects Debian or Ubuntu." >&2
  echo "hk setup: install these by other means:$missing" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq; then
  echo "hk setup: apt-get update failed (no network or no package mirror?)" >&2
  exit 1
fi
# shellcheck disable=SC2086
if ! $SUDO apt-get install -y -qq --no-install-recommends $missing; then
  echo "hk setup: apt-get install failed for:$missing" >&2
  exit 1
fi
