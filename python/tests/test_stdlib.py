"""hk.add, hk.gelu, hk.sum, hk.softmax ...: against NumPy, in place."""
import math

import numpy as np
import pytest

import hk


def test_add_writes_out_in_place():
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, np.float32)
    z = np.empty(100, np.float32)
    addr = z.ctypes.data
    r = hk.add(x, y, out=z)
    assert r is z and z.ctypes.data == addr
    np.testing.assert_array_equal(z, x + y)


def test_add_allocates_and_picks_the_instance():
    for dt in (np.float32, np.float64, np.int32, np.int64, np.float16):
        x = np.arange(7, dtype=dt)
        r = hk.add(x, x)
        assert r.dtype == dt
        np.testing.assert_array_equal(r, x + x)


def test_broadcasting_strides_and_values():
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    row = np.array([10.0, 20, 30, 40])
    np.testing.assert_array_equal(hk.add(m, row), m + row)
    np.testing.assert_array_equal(hk.mul(m.T, 2.0), m.T * 2)
    np.testing.assert_array_equal(hk.sub(m[::-1, ::2], m[:, 1::2]),
                                  m[::-1, ::2] - m[:, 1::2])
    np.testing.assert_array_equal(hk.add(m, [1, 2, 3, 4]), m + [1, 2, 3, 4])
    col = np.arange(3.0).reshape(3, 1)
    np.testing.assert_array_equal(hk.sub(col, row), col - row)


def test_in_place_on_a_view():
    a = np.zeros((4, 6), np.float32)
    hk.add(a[:, ::2], 1.0, out=a[:, ::2])
    assert a[:, ::2].sum() == 12 and a[:, 1::2].sum() == 0


def test_gelu_matches_numpy():
    x = np.linspace(-6, 6, 10001, dtype=np.float64)
    # the stdlib's GELU is the tanh form
    ref = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi)
                                 * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(hk.gelu(x), ref, rtol=1e-9, atol=1e-12)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(hk.gelu(x32), ref, rtol=1e-5, atol=1e-6)


def test_reductions():
    x = np.random.default_rng(0).standard_normal((5, 6, 7)).astype(np.float64)
    s = hk.sum(x)
    assert isinstance(s, np.float64) and s == pytest.approx(x.sum())
    np.testing.assert_allclose(hk.sum(x, axis=-1), x.sum(axis=-1))
    np.testing.assert_allclose(hk.sum(x, axis=(0, 2), keepdims=True),
                               x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(hk.max(x, axis=1), x.max(axis=1))
    np.testing.assert_array_equal(hk.argmax(x, axis=0), x.argmax(axis=0))
    lo, hi = hk.minmax(x, axis=-1)
    np.testing.assert_array_equal(lo, x.min(axis=-1))
    np.testing.assert_array_equal(hi, x.max(axis=-1))
    out = np.empty(5)
    assert hk.mean(x, axis=(1, 2), out=out) is out
    np.testing.assert_allclose(out, x.mean(axis=(1, 2)))


def test_sum_and_mean_of_bool_as_numpy():
    # NumPy sums a mask as int64 (the count of trues), means it as float64
    b = np.random.default_rng(1).random((37, 5, 3)) > 0.4
    s = hk.sum(b)
    assert isinstance(s, np.int64) and s == b.sum()
    for axis in (None, 0, 1, -1, (0, 2)):
        got = hk.sum(b, axis=axis)
        want = b.sum(axis=axis)
        assert np.asarray(got).dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(hk.mean(b, axis=axis), b.mean(axis=axis))
    assert np.isnan(hk.mean(np.zeros(0, np.bool_)))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_any_axis():
    x = np.random.default_rng(1).standard_normal((4, 5, 6))
    for axis in (-1, 0, 1, 2):
        np.testing.assert_allclose(hk.softmax(x, axis=axis),
                                   _softmax(x, axis), rtol=1e-12)
    y = np.empty_like(x)
    assert hk.softmax(x, out=y, axis=1) is y
    np.testing.assert_allclose(y, _softmax(x, 1), rtol=1e-12)


def test_cast_takes_dtype():
    x = np.array([1.5, -2.25, 3.0], np.float32)
    h = hk.cast(x, dtype=np.float16)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, x.astype(np.float16))
    assert hk.cast(x, dtype="bool").dtype == np.bool_
    with pytest.raises(ValueError, match="out type f64"):
        hk.cast(x, dtype="f64")  # f32 casts to f32, f16, bf16, bool
    with pytest.raises(TypeError, match="dtype="):
        hk.cast(x)


def test_help_says_what_it_does():
    assert "out = x + y" in hk.add.__doc__
    assert hk.add.__text_signature__.startswith("(x, y, out=None")
    assert "axis" in hk.sum.__doc__


def test_bf16_tagged_uint16_and_half_values():
    # bf16 1.0, 2.0 -> 2.0, 4.0; bits viewed as hk.bfloat16
    bits = np.array([0x3F80, 0x4000], np.uint16).view(hk.bfloat16)
    r = hk.add(bits, bits)
    np.testing.assert_array_equal(r, [0x4000, 0x4080])
    assert r.dtype == hk.bfloat16 and r.dtype.metadata == {"hk": "bf16"}
    # hk's bf16 results are tagged: sum, mean, argmax take them as bf16
    xb = hk.cast(np.float32([-3, 1, 2, -1]), dtype="bf16")
    assert xb.dtype.metadata == {"hk": "bf16"}
    assert (hk.argmax(xb), hk.argmin(xb)) == (2, 0)
    assert int(hk.sum(xb)) == 0xBF80 and int(hk.mean(xb)) == 0xBE80
    assert int(hk.max(xb[1:3])) == 0x4000  # a view keeps the tag
    # a plain uint16 array is u16: summed as integers, refused by kernels
    # with no u16 instance (not read as bf16 behind the user's back)
    u = np.uint16([1, 40000, 300])
    assert int(hk.sum(u)) == 40301
    with pytest.raises(hk.ArgumentError, match=r"x.view\(hk.bfloat16\)"):
        hk.max(u)
    h = np.array([1.5, 2.5], np.float16)
    np.testing.assert_array_equal(hk.mul(h, 2.0), [3.0, 5.0])


def test_fill_and_arange_take_values():
    out = np.empty(5, np.int64)
    assert hk.fill(7, out=out) is out and (out == 7).all()
    np.testing.assert_array_equal(hk.arange(1.0, 0.5, out=np.empty(4)),
                                  [1, 1.5, 2, 2.5])


def test_tiers_visible():
    assert hk.add.__self__.tier == "inline"
    assert {i["name"] for i in hk.add.__self__.instances} >= {"add_f32"}


def test_rows_kernels_take_lists_on_any_axis():
    lst = [[0.0, 1.0, 3.0], [2.0, 5.0, -1.0]]
    x = np.array(lst)
    for f in (hk.softmax, hk.log_softmax):
        for axis in (0, 1, -2):
            np.testing.assert_allclose(f(lst, axis=axis, dtype="f64"),
                                       f(x, axis=axis), rtol=1e-12)
        out = np.empty((2, 3))
        assert f(lst, axis=0, out=out) is out
        np.testing.assert_allclose(out, f(x, axis=0), rtol=1e-12)
    np.testing.assert_allclose(hk.softmax(lst, axis=0, dtype=np.float64),
                               _softmax(x, 0), rtol=1e-12)
    w, b = np.ones(2), np.zeros(2)
    for got, want in zip(hk.layernorm(lst, w, b, 1e-5, axis=0),
                         hk.layernorm(x, w, b, 1e-5, axis=0)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_numpy_scalars_are_typed():
    e = hk.exp(np.float32(1))
    assert e.dtype == np.float32 and e == pytest.approx(math.e)
    s = hk.sum(np.float64(2))
    assert isinstance(s, np.float64) and s == 2
    assert hk.add(np.ones(2, np.int32), np.int32(3)).dtype == np.int32
    with pytest.raises(hk.ArgumentError, match="'y' is f64 with 'x' f32"):
        hk.add(np.ones(2, np.float32), np.float64(2))
    out = np.empty(2, np.float32)
    hk.fill(np.float64(3), out=out)       # a scalar parameter: a value
    assert (out == 3).all()
