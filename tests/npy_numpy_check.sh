#!/bin/sh
# npy_numpy_check.sh — checks tools/npy.c against NumPy itself: the files hk writes
# must load in NumPy with equal values and be byte-identical to np.save's, and the
# files NumPy writes (every hk type, several shapes, 0-d, empty, Fortran order,
# versions 2.0 and 3.0) must load in hk.
#
# Usage: npy_numpy_check.sh PATH/TO/test_npy
# Exits 77 (skipped) when NumPy is not available; HK_NUMPY_PYTHON picks the Python
# (default /usr/bin/python3, since a pyenv python3 first in PATH may lack NumPy).
set -u
bin=${1:?usage: npy_numpy_check.sh PATH/TO/test_npy}
py=${HK_NUMPY_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
  echo "SKIPPED: numpy not available"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/hk_npy_numpy.XXXXXX") || exit 2
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/ours" "$dir/theirs" || exit 2

"$bin" --write-samples "$dir/ours" || { echo "test_npy --write-samples failed"; exit 1; }

"$py" - "$dir/ours" "$dir/theirs" <<'EOF' || exit 1
# Loads every file test_npy wrote, compares it with the same values made by NumPy
# (and its bytes with np.save's), then writes NumPy's own files for test_npy to read.
import io, os, sys
import numpy as np

ours, theirs = sys.argv[1], sys.argv[2]
TYPES = {'f32': '<f4', 'f64': '<f8', 'i8': '|i1', 'i16': '<i2', 'i32': '<i4', 'i64': '<i8',
         'u8': '|u1', 'u16': '<u2', 'u32': '<u4', 'u64': '<u8', 'f16': '<f2', 'bool': '|b1'}

def expected(tag, shape):
    """The sample values of test_npy.c's sample_value(), made by NumPy."""
    dt = np.dtype(TYPES[tag])
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.uint64)
    if dt.kind == 'b':
        a = (i * np.uint64(37) + np.uint64(5)) % np.uint64(3) != 0
    elif dt.kind in 'iu':
        a = (i * np.uint64(37) + np.uint64(5)).astype(dt)  # wraps, as C's low bytes
    else:
        a = ((i % np.uint64(1000)).astype(np.float64) * 0.25 - 7.0).astype(dt)
    return a.reshape(shape)

bad = 0
names = sorted(os.listdir(ours))
if len(names) != 96:
    print(f"expected 96 sample files from test_npy, found {len(names)}")
    bad += 1
for name in names:
    tag, code = name[:-len('.npy')].split('_')
    shape = () if code == 'scalar' else tuple(int(x) for x in code.split('x'))
    want = expected(tag, shape)
    path = os.path.join(ours, name)
    got = np.load(path)
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        print(f"{name}: NumPy read {got.dtype} {got.shape}, expected {want.dtype} {want.shape} "
              f"and equal values")
        bad += 1
    buf = io.BytesIO()
    np.save(buf, want)
    with open(path, 'rb') as f:
        if f.read() != buf.getvalue():
            print(f"{name}: bytes differ from what np.save writes")
            bad += 1
    np.save(os.path.join(theirs, name), want)

# Files only NumPy makes: Fortran order (1-D, hand-marked, and 2-D), versions
# 2.0 and 3.0, big-endian, bool, and an object array hk must refuse.
with open(os.path.join(theirs, 'fortran_f32_5.npy'), 'wb') as f:
    np.lib.format.write_array_header_1_0(
        f, {'descr': '<f4', 'fortran_order': True, 'shape': (5,)})
    f.write(expected('f32', (5,)).tobytes())
np.save(os.path.join(theirs, 'fortran_i32_2x3.npy'), np.asfortranarray(expected('i32', (2, 3))))
with open(os.path.join(theirs, 'v2_f64_4.npy'), 'wb') as f:
    np.lib.format.write_array(f, expected('f64', (4,)), version=(2, 0))
with open(os.path.join(theirs, 'v3_u16_2x2.npy'), 'wb') as f:
    np.lib.format.write_array(f, expected('u16', (2, 2)), version=(3, 0))
np.save(os.path.join(theirs, 'be_f32_3.npy'), expected('f32', (3,)).astype('>f4'))
np.save(os.path.join(theirs, 'bool_3.npy'), np.array([True, False, True]))
np.save(os.path.join(theirs, 'object_2.npy'), np.array([1, 'a'], dtype=object))
sys.exit(1 if bad else 0)
EOF

"$bin" --read-samples "$dir/theirs"
