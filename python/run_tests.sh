#!/bin/sh
# run_tests.sh PYTHON BUILD_DIR SOURCE_DIR HK_CLI [install]: the Python
# module's tests (ctest runs them): pytest over the package the build made in
# BUILD_DIR/python; with "install", `pip install --no-build-isolation` of a
# copy of python/ into a fresh venv (--system-site-packages), then an import
# and a call from outside the tree. Exit 77 (skipped) with the reason when
# pytest or venv is missing.
set -eu
PY=$1 B=$2 S=$3 CLI=$4
export PYTHONDONTWRITEBYTECODE=1
if [ "${5:-}" = install ]; then
  "$PY" -c "import venv, setuptools, wheel, pip" 2>/dev/null || {
    echo "skipped: python3-venv, python3-pip, python3-setuptools or" \
      "python3-wheel missing"
    exit 77
  }
  t=$(mktemp -d)
  trap 'rm -rf "$t"' EXIT
  cp -r "$S/python" "$t/python"
  rm -rf "$t/python/build" "$t/python/build-libhk" "$t/python"/*.egg-info
  # without pip of its own (ensurepip takes seconds): the system's pip,
  # seen through --system-site-packages, installs into the venv
  "$PY" -m venv --system-site-packages --without-pip "$t/venv"
  HK_BUILD_DIR=$B HK_SOURCE_DIR=$S "$t/venv/bin/python" -m pip install -q \
    --no-build-isolation --no-index "$t/python"
  cd "$t"
  "$t/venv/bin/python" - <<'PYEOF'
import numpy as np, hk
assert hk.__file__.startswith(__import__("sys").prefix), hk.__file__
x = np.arange(5, dtype=np.float32)
z = np.empty_like(x)
assert hk.add(x, x, out=z) is z and (z == 2 * x).all()
print("python_install: hk", hk.__version__, "from", hk.__file__)
PYEOF
  exit 0
fi
"$PY" -c "import pytest" 2>/dev/null || {
  echo "skipped: pytest missing (python3-pytest; tools/setup.sh installs it)"
  exit 77
}
cd "$B/python"
HK_CLI=$CLI HK_SOURCE_DIR=$S exec "$PY" -m pytest -q -p no:cacheprovider \
  "$S/python/tests"
