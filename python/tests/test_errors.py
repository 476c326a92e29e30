"""Bad input: a Python exception naming the parameter, never a crash."""
import numpy as np
import pytest

import hk


def test_wrong_dtypes():
    x = np.ones(4, np.float32)
    with pytest.raises(hk.ArgumentError,
                       match=r"'y' is f64 with 'x' f32: .*\('y' may be f32;"):
        hk.add(x, np.ones(4, np.float64))
    # a dtype no instance takes there: the ones it may be
    with pytest.raises(hk.ArgumentError,
                       match=r"'x' is i32: .*'x' may be one of bf16, f16, f32, "
                             r"f64;"):
        hk.gelu(np.ones(4, np.int32))
    with pytest.raises(ValueError, match="'out'"):
        hk.add(x, x, out=np.empty(4, np.float64))
    with pytest.raises(TypeError, match="'x'.*object"):
        hk.add(np.array([1, "a"], dtype=object), x)
    with pytest.raises(TypeError, match="'x'.*complex"):
        hk.add(np.ones(4, np.complex64), x)
    with pytest.raises(TypeError, match="'x'.*big-endian|'x'.*>f4"):
        hk.add(np.ones(4, ">f4"), x)


def test_non_writable_out():
    x = np.ones(4, np.float32)
    z = np.empty(4, np.float32)
    z.flags.writeable = False
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.add(x, x, out=z)


def test_read_only_inout(plugins):
    k = hk.Context(plugins=[plugins]).kernel("saxpy")
    x = np.ones(4, np.float32)
    y = np.ones(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(ValueError, match="'y'.*read-only"):
        k(2.0, x, y)
    with pytest.raises(TypeError, match="'y'"):
        k(2.0, x, [1.0, 2.0, 3.0, 4.0])


def test_shapes_axes_and_overlap():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(hk.ArgumentError, match="broadcast"):
        hk.add(x, np.ones(5, np.float32))
    with pytest.raises(hk.ArgumentError, match="'out'"):
        hk.add(x, x, out=np.empty((4, 3), np.float32))
    with pytest.raises(hk.ArgumentError, match="axis"):
        hk.sum(x, axis=2)
    with pytest.raises(ValueError, match="axis"):
        hk.softmax(x, axis=5)
    with pytest.raises(hk.ArgumentError, match="overlap"):
        hk.add(x[:, 1:], x[:, 1:], out=x[:, :-1])
    # an out of another dtype over the same first bytes is not in place:
    # refused, not run over the input still to read
    b = np.zeros(32, np.bool_)
    b[:8] = [1, 0, 1, 1, 0, 1, 0, 1]
    with pytest.raises(hk.ArgumentError, match="'out' overlaps"):
        hk.cast(b[:8], out=b.view(np.float32))
    h = np.ones(2048, np.float16)
    with pytest.raises(hk.ArgumentError, match="'out' overlaps"):
        hk.cast(h[:1024], out=h.view(np.float32))
    with pytest.raises(hk.ArgumentError, match="overlaps"):
        hk.equal(x.ravel(), x.ravel(), out=x.ravel().view(np.bool_)[:12])
    # views whose extents meet but whose elements do not are allowed
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    want = a.copy()
    want[1::2] = -want[0::2]
    hk.neg(a[0::2], out=a[1::2])
    assert np.array_equal(a, want)
    want[:, 4:] = -want[:, :4]
    hk.neg(a[:, :4], out=a[:, 4:])
    assert np.array_equal(a, want)
    want[:, 7] = want[:, :7].sum(axis=1)
    hk.sum(a[:, :7], axis=1, out=a[:, 7])
    assert np.array_equal(a, want)
    hk.softmax(a[:, :4], out=a[:, 4:])
    assert np.allclose(a[:, 4:], np.exp(a[:, :4] - a[:, :4].max(1, keepdims=True))
                       / np.exp(a[:, :4] - a[:, :4].max(1, keepdims=True)).sum(1, keepdims=True))
    with pytest.raises(hk.ArgumentError, match="overlaps"):
        hk.neg(a[:, :4], out=a[:, 3:7])


def test_bad_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="missing argument 'y'"):
        hk.add(x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        hk.add(x, x, foo=1)
    with pytest.raises(TypeError, match="at most"):
        hk.add(x, x, x, x)
    with pytest.raises(TypeError, match="'x'"):
        hk.add("hello", x)
    with pytest.raises(TypeError, match="axis"):
        hk.sum(x, axis="a")
    with pytest.raises(TypeError, match="unexpected keyword argument 'axis'"):
        hk.add(x, x, axis=0)
    with pytest.raises(TypeError, match="'value'"):
        hk.fill(x, out=np.empty(4, np.float32))
    with pytest.raises(OverflowError, match="'value'.*i32"):
        hk.fill(2**40, out=np.empty(4, np.int32))
    # a NumPy complex scalar is not a real value (NumPy would only warn)
    with pytest.raises(TypeError, match="'alpha' is f32: \\(3\\+4j\\)"):
        hk.scale(x, np.complex64(3 + 4j))
    # dtype= that the out given contradicts is an error, not ignored
    with pytest.raises(TypeError, match="dtype=f64, but out parameter 'out' "
                                        "is given as f32"):
        hk.add(x, x, out=np.empty(4, np.float32), dtype=np.float64)
    assert hk.add(x, x, out=np.empty(4, np.float32),
                  dtype=np.float32).dtype == np.float32
    # every type a parameter could have is named
    with pytest.raises(TypeError, match="may be bf16, f16, f32, f64"):
        hk.add(1.0, 2.0)
    # axis=None is the whole array in NumPy and SciPy: a rows kernel says
    # it runs over one axis instead of picking the last
    with pytest.raises(TypeError, match="axis=None is not taken"):
        hk.softmax(np.ones((2, 3), np.float32), axis=None)


def test_freed_context(plugins):
    ctx = hk.Context(plugins=[plugins])
    k = ctx.kernel("saxpy")
    ctx.close()
    x = np.ones(4, np.float32)
    with pytest.raises(hk.ContextClosedError):
        k(2.0, x, x.copy())
    with pytest.raises(hk.ContextClosedError):
        ctx.kernel("saxpy")
    with pytest.raises(hk.ContextClosedError):
        ctx.reload()
    assert "closed" in repr(k)
    ctx.close()  # twice is fine


def test_kernel_file_with_errors():
    text = ('{"schema_version": 1, "name": "bad", "kind": "elementwise",\n'
            ' "params": [{"name": "x", "type": "f32", "role": "in"},\n'
            '            {"name": "y", "type": "f32", "role": "out"}],\n'
            ' "body": "y = system(x);"}')
    with pytest.raises(hk.KernelError) as e:
        hk.Kernel.from_json(text, name="bad.json")
    err = e.value
    assert err.file == "<bad.json>" and err.line == 4 and err.column > 1
    assert err.field == "body" and "system" in err.message
    assert err.code == "HK_ESCHEMA"
    with pytest.raises(hk.KernelError) as e:
        hk.Kernel.from_json('{"schema_version": 1, "name": "x",\n "kind": 3}')
    assert e.value.file == "<string>"
    assert ("<string>", 2, 10, "kind") in [l[:4] for l in e.value.errors]
    with pytest.raises(hk.KernelError):
        hk.Kernel.from_json("{not json")


def test_unknown_kernel():
    with pytest.raises(hk.NotFoundError, match="nope"):
        hk.stdlib_context.kernel("nope")


def test_odd_arrays():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="'x'.*at most 8"):
        hk.neg(np.ones((1,) * 9, np.float32))
    raw = np.zeros(16, np.uint8)
    odd = np.ndarray((3,), np.float32, raw, offset=0, strides=(5,))
    with pytest.raises(ValueError, match="'x'.*stride"):
        hk.neg(odd)
    with pytest.raises(TypeError, match="'alpha'"):
        hk.axpy("two", x, x.copy())
    with pytest.raises(TypeError, match="'value' is i32: 1.5"):
        hk.fill(1.5, out=np.empty(2, np.int32))


def test_objects_never_initialised():
    k = hk.Kernel.__new__(hk.Kernel)
    with pytest.raises(TypeError, match="__init__"):
        k(1.0)
    with pytest.raises(TypeError, match="__init__"):
        k.tier
    c = hk.Context.__new__(hk.Context)
    with pytest.raises(hk.ContextClosedError):
        c.kernels()
    with pytest.raises(TypeError):
        hk.Kernel(object(), "add")


def test_borrowed_read_only_memory_is_not_written():
    b = b"\x00\x00\x80\x3f" * 4
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.fill(5.0, out=hk.from_dlpack(np.frombuffer(b, np.float32)))
    assert b == b"\x00\x00\x80\x3f" * 4
    a = np.ones(4, np.float32)
    a.flags.writeable = False
    h = hk.from_dlpack(a)
    assert h.readonly
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.add(a, a, out=h)
    np.testing.assert_array_equal(hk.add(h, h), [2, 2, 2, 2])  # read: fine
    with pytest.raises(ValueError, match="read-only"):
        h.copy_from(np.zeros(4, np.float32))
    assert not np.asarray(h).flags.writeable    # __array_interface__ says so
    with pytest.raises(BufferError):
        h.__dlpack__()                          # a capsule could not
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.fill(1.0, out=memoryview(bytearray(16)).toreadonly().cast("f"))
    c = np.ones(4, np.float32)
    hc = hk.from_dlpack(c)
    c.flags.writeable = False                   # after borrowing
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.add(c, c, out=hc)
    assert (a == 1).all() and (c == 1).all()


def test_axis_is_checked_not_truncated():
    x = np.ones((2, 3, 4), np.float32)
    for ax in (2**32, 2**32 + 1, 2**63, -2**70, (0, 2**40)):
        with pytest.raises(ValueError, match=r"axis .* out of range.* 3 axes"):
            hk.sum(x, axis=ax)
        with pytest.raises(ValueError, match=r"axis .* out of range.* 3 axes"):
            hk.softmax(x, axis=ax if isinstance(ax, int) else 2**40)
    with pytest.raises(ValueError, match=r"axis \d{40}\.\.\. is out of range"):
        hk.sum(x, axis=10**100)
    for f in (hk.sum, hk.softmax):
        with pytest.raises(TypeError, match="axis.*bool"):
            f(x, axis=True)
    assert hk.sum(x, axis=np.int64(2)).shape == (2, 3)


def test_set_threads_range():
    before = hk.get_threads()
    for n in (-1, 257, 10**6, 2**40, 2**70):
        with pytest.raises(ValueError, match=r"threads must be 0\.\.256"):
            hk.set_threads(n)
    assert hk.get_threads() == before


def test_empty_says_what_is_wrong():
    with pytest.raises(ValueError, match=r"shape\[1\] is negative"):
        hk.empty((3, -1))
    with pytest.raises(ValueError, match="9 dimensions.*at most 8"):
        hk.empty((1,) * 9)
    for shape in ((2**62, 4), (2**61,), (0, 2**62, 4)):
        with pytest.raises(ValueError, match="overflows"):
            hk.empty(shape)
    with pytest.raises(ValueError, match="64 bits"):
        hk.empty((2**70,))


def test_huge_values_are_named_short():
    for out in (np.empty(2, np.float32), np.empty(2, np.int32)):
        with pytest.raises(OverflowError, match=r"'value': 1{1}0{39}\.\.\. "
                           "does not fit") as e:
            hk.fill(10**400, out=out)
        assert len(str(e.value)) < 120


def test_finite_values_beyond_the_float_type_do_not_fit():
    # they would round to infinity; infinity itself, and the largest
    # finite value, stay values
    with pytest.raises(OverflowError, match="'alpha': 1e.40 does not fit in f32"):
        hk.scale(np.ones(2, np.float32), 1e40)
    with pytest.raises(OverflowError, match="'y': 1000000.0 does not fit in f16"):
        hk.add(np.ones(2, np.float16), 1e6)
    with pytest.raises(OverflowError, match="'y'.* does not fit in f16"):
        hk.add(np.ones(2, np.float16), [1.0, 70000.0])
    np.testing.assert_array_equal(hk.add(np.zeros(2, np.float16), 65504.0),
                                  [65504, 65504])
    assert np.isinf(hk.scale(np.ones(2, np.float32), float("inf"))).all()


def test_lists_are_values_of_the_type():
    i32 = np.ones(3, np.int32)
    with pytest.raises(TypeError, match="'y' is i32: 1.7 is not a value"):
        hk.mul(i32, [1.7, 2.2, 3.9])
    with pytest.raises(OverflowError, match="'y': 1099511627776 does not fit"):
        hk.add(np.ones(2, np.int32), [2**40, 1])
    with pytest.raises(TypeError, match="'y'"):
        hk.add(np.ones(2, np.int32), [[1, 2], [3]])
    np.testing.assert_array_equal(hk.add(i32, [1, 2, 3]), [2, 3, 4])
    np.testing.assert_array_equal(hk.add(np.ones(2, np.float32), [1.5, 2]),
                                  [2.5, 3])


def test_bad_environment_is_warned():
    """libhk ignores HK_THREADS, HK_JOBS or HK_PAR_MIN it cannot read (it
    never prints); import hk says so."""
    import os
    import subprocess
    import sys
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for name, value, words in (
            ("HK_THREADS", "abc", "HK_THREADS='abc' is not a whole number"),
            ("HK_THREADS", "0", "HK_THREADS='0' is not a whole number"),
            ("HK_JOBS", "300", "HK_JOBS='300' is not a whole number"),
            ("HK_PAR_MIN", "5,x", "HK_PAR_MIN='5,x' is not N or CHEAP")):
        r = subprocess.run([sys.executable, "-c", "import hk"],
                           env=dict(base, **{name: value}),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert words in r.stderr and "RuntimeWarning" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-c", "import hk"],
                       env=dict(base, HK_THREADS="2", HK_JOBS="1",
                                HK_PAR_MIN="100,50"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr


def test_plugins_that_fail_to_load_are_warned(tmp_path):
    # the other files load; the failures are a PluginWarning (and stay in
    # Context.problems), and a kernel not found says they may define it
    (tmp_path / "good.json").write_text(
        '{"schema_version": 1, "name": "twice", "kind": "elementwise",'
        ' "params": [{"name": "x", "type": "f32", "role": "in"},'
        ' {"name": "y", "type": "f32", "role": "out"}], "body": "y = 2 * x;"}')
    (tmp_path / "bad.json").write_text(
        '{"schema_version": 1, "name": "thrice", "kind": "elementwis",'
        ' "params": [], "body": ""}')
    with pytest.warns(hk.PluginWarning, match=r"bad.json:1:\d+: error: kind"):
        ctx = hk.Context(plugins=str(tmp_path), cache=False)
    assert "bad.json" in ctx.problems
    np.testing.assert_array_equal(ctx.kernel("twice")(np.ones(2, np.float32)),
                                  [2, 2])
    with pytest.raises(hk.NotFoundError, match="did not load may define it"):
        ctx.kernel("thrice")
    with pytest.warns(hk.PluginWarning, match="cannot read"):
        hk.Context(plugins=str(tmp_path / "nowhere"), cache=False)


def test_zero_d_arrays_are_values_of_a_scalar_parameter():
    # as NumPy scalars are: their element, range-checked; a bf16 one by
    # the value its bits hold
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(hk.scale(x, np.array(2.0, np.float32)),
                                  [0, 2, 4])
    np.testing.assert_array_equal(hk.scale(x, np.array(3)), [0, 3, 6])
    two = hk.cast(np.float32([2.0]), dtype="bf16").reshape(())
    np.testing.assert_array_equal(hk.scale(x, two), [0, 2, 4])
    with pytest.raises(OverflowError, match="'alpha': 1e.40 does not fit"):
        hk.scale(x, np.array(1e40))
    with pytest.raises(TypeError, match=r"'alpha' is f32: \(1\+2j\) is not"):
        hk.scale(x, np.array(1 + 2j))
    # an object array's element may be the array itself: refused, no
    # endless recursion
    a = np.empty((), object)
    a[()] = a
    with pytest.raises(TypeError, match="'alpha' is f32"):
        hk.scale(x, a)
