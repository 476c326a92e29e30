"""Bad input: a Python exception naming the parameter, never a crash."""
import numpy as np
import pytest

import hk


def test_wrong_dtypes():
    x = np.ones(4, np.float32)
    with pytest.raises(hk.ArgumentError, match="'y' is f64 with 'x' f32"):
        hk.add(x, np.ones(4, np.float64))
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
