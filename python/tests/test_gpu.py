"""GPU arrays: __cuda_array_interface__ and DLPack. Without a GPU the
CPU-side checks run: fake device arrays give clear errors, DLPack host
arrays run in place."""
import ctypes

import numpy as np
import pytest

import hk


class FakeCuda:
    """What CuPy shows: a device pointer that no one may touch here."""

    def __init__(self, shape, typestr="<f4", readonly=False):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (0xDEAD0000, readonly),
            "strides": None, "version": 3}


class DLHost:
    """Only the DLPack protocol, over a NumPy array (CPU)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class _DLVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("t", _DLTensor)]


_VERSIONED = b"dltensor_versioned"  # the capsule keeps a pointer to it


class DL1Host:
    """A DLPack 1.0 producer (NumPy 2's kind) of a float32 array, its
    capsule flagged read-only or not; it keeps the tensor alive."""

    def __init__(self, a, readonly):
        self.a, self.readonly, self.lent = a, readonly, []

    def __dlpack__(self, stream=None, max_version=None):
        assert max_version is not None and max_version[0] == 1
        shape = (ctypes.c_int64 * self.a.ndim)(*self.a.shape)
        m = _DLVersioned(1, 0)
        self.lent.append((m, shape))  # no deleter: kept until self goes
        m.flags = 1 if self.readonly else 0  # DLPACK_FLAG_BITMASK_READ_ONLY
        m.t.data, m.t.device_type, m.t.ndim = self.a.ctypes.data, 1, 1
        m.t.code, m.t.bits, m.t.lanes = 2, 32, 1
        m.t.shape = shape
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(m), _VERSIONED, None)

    def __dlpack_device__(self):
        return (1, 0)


class DLCuda(DLHost):
    def __dlpack_device__(self):
        return (2, 0)


def test_mixing_host_and_gpu_names_both():
    with pytest.raises(ValueError, match="'x'.*host.*'y'.*GPU"):
        hk.add(np.ones(4, np.float32), FakeCuda((4,)))


def test_gpu_array_without_device_is_a_clear_error():
    if hk.cuda_available():
        pytest.skip("a GPU is here: tools/gpu_check.sh runs the GPU path")
    with pytest.raises(hk.UnsupportedError, match="'x'.*GPU.*CUDA"):
        hk.add(FakeCuda((4,)), FakeCuda((4,)), out=FakeCuda((4,)))
    with pytest.raises(hk.UnsupportedError, match="'x'.*GPU.*CUDA"):
        hk.add(FakeCuda((4,)), FakeCuda((4,)))   # out: an hk.Array
    with pytest.raises(hk.UnsupportedError, match="'x'.*DLPack"):
        hk.neg(DLCuda(np.ones(3, np.float32)),
               out=DLCuda(np.ones(3, np.float32)))


def test_gpu_checks_before_the_device():
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.add(FakeCuda((4,)), FakeCuda((4,)),
               out=FakeCuda((4,), readonly=True))
    with pytest.raises(TypeError, match="'x'.*typestr"):
        hk.add(FakeCuda((4,), "<c8"), FakeCuda((4,)), out=FakeCuda((4,)))
    with pytest.raises(ValueError, match="'y'.*Python value"):
        hk.add(FakeCuda((4,)), 1.0, out=FakeCuda((4,)))
    bad = FakeCuda((4,))
    bad.__cuda_array_interface__ = {"shape": 4}
    with pytest.raises(ValueError, match="'x'.*bad __cuda_array_interface__"):
        hk.neg(bad, out=FakeCuda((4,)))


def test_dlpack_host_arrays_run_in_place():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    z = np.zeros((2, 3), np.float32)
    r = hk.add(DLHost(x), DLHost(x), out=DLHost(z))
    assert isinstance(r, DLHost)
    np.testing.assert_array_equal(z, 2 * x)
    np.testing.assert_array_equal(hk.mul(DLHost(x[:, ::2]), 3.0),
                                  3 * x[:, ::2])


def test_dlpack_1_read_only_flag():
    x = np.arange(4, dtype=np.float32)
    ro = DL1Host(x, readonly=True)
    with pytest.raises(ValueError, match="'out'.*read-only.*DLPack"):
        hk.add(x, x, out=ro)
    h = hk.from_dlpack(ro)
    assert h.readonly and h.ptr == x.ctypes.data
    with pytest.raises(ValueError, match="'out'.*read-only"):
        hk.fill(1.0, out=h)
    np.testing.assert_array_equal(hk.add(ro, ro), 2 * x)   # read: fine
    del h                                   # before its producer
    np.testing.assert_array_equal(x, np.arange(4))
    z = np.zeros(4, np.float32)
    hk.add(x, x, out=DL1Host(z, readonly=False))
    np.testing.assert_array_equal(z, 2 * x)


def test_hk_arrays_and_dlpack_on_the_host():
    a = hk.empty((2, 3), np.float32)
    assert (a.shape, a.dtype, a.device) == ((2, 3), "f32", "cpu")
    a.copy_from(np.arange(6, dtype=np.float32).reshape(2, 3))
    view = np.from_dlpack(a)            # zero-copy, through __dlpack__
    assert view.ctypes.data == a.ptr
    assert np.asarray(a).ctypes.data == a.ptr   # __array_interface__
    b = hk.empty((2, 3), "f32")
    assert hk.add(a, a, out=b) is b
    np.testing.assert_array_equal(b.numpy(), 2 * view)
    np.asarray(a)[0, 0] = 100           # the same memory (NumPy's DLPack
    assert view[0, 0] == 100            # views are read-only)
    assert a.numpy()[0, 0] == 100
    x = np.arange(4.0)
    h = hk.from_dlpack(x)               # NumPy's memory, borrowed
    assert h.ptr == x.ctypes.data and h.dtype == "f64"
    h2 = hk.from_dlpack(DLHost(x))      # through a DLPack capsule
    assert h2.ptr == x.ctypes.data
    del h2
    cap = hk.to_dlpack(a)
    assert type(cap).__name__ == "PyCapsule"
    del cap                             # never consumed: freed
    with pytest.raises(TypeError, match="not an array"):
        hk.from_dlpack(3.0)
    with pytest.raises(ValueError, match="device"):
        hk.empty((2,), "f32", device="tpu")


def test_gpu_arrays_need_a_device():
    if hk.cuda_available():
        a = hk.empty((1000,), "f32", device="cuda")
        a.copy_from(np.ones(1000, np.float32))
        b = hk.empty((1000,), "f32", device="cuda")
        hk.add(a, a, out=b)
        np.testing.assert_array_equal(b.numpy(), 2)
        c = hk.add(a, b)                # allocated on the GPU
        assert isinstance(c, hk.Array) and c.device == "cuda"
        np.testing.assert_array_equal(c.numpy(), 3)
        assert hk.sum(c).numpy() == 3000
        assert a.__dlpack_device__()[0] == 2
        assert a.__cuda_array_interface__["data"][0] == a.ptr
        return
    with pytest.raises(hk.UnsupportedError, match="CUDA"):
        hk.empty((4,), "f32", device="cuda")


# ---- real GPU frameworks (run by tools/gpu_check.sh on a machine with a GPU
# and CuPy or PyTorch; skipped elsewhere with the reason) -------------------

def _framework(name):
    if not hk.cuda_available():
        pytest.skip("no CUDA device: hk.cuda_available() is False")
    return pytest.importorskip(name, reason=f"{name} is not installed")


def test_cupy_arrays_run_in_place():
    cp = _framework("cupy")
    rng = np.random.default_rng(5)
    xh = rng.standard_normal((64, 300)).astype(np.float32)
    yh = rng.standard_normal((64, 300)).astype(np.float32)
    x, y = cp.asarray(xh), cp.asarray(yh)
    z = cp.empty_like(x)
    ptr = z.data.ptr
    cp.cuda.Device().synchronize()      # hk waits for nothing CuPy queued
    assert hk.add(x, y, out=z) is z and z.data.ptr == ptr
    np.testing.assert_array_equal(cp.asnumpy(z), xh + yh)
    g = hk.gelu(x)                      # out allocated by hk, on the GPU
    assert isinstance(g, hk.Array) and g.device == "cuda"
    ref = 0.5 * xh * (1 + np.tanh(0.7978845608 * (xh + 0.044715 * xh ** 3)))
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-5, atol=1e-6)
    gc = cp.from_dlpack(g)              # zero-copy back to CuPy
    assert gc.data.ptr == g.ptr
    np.testing.assert_array_equal(cp.asnumpy(gc), g.numpy())
    s = hk.sum(x)
    np.testing.assert_allclose(float(s.numpy()), xh.sum(dtype=np.float64),
                               rtol=1e-4)
    sm = cp.empty_like(x)
    hk.softmax(x, axis=-1, out=sm)      # a rows kernel: one row per thread
    e = np.exp(xh - xh.max(-1, keepdims=True))
    np.testing.assert_allclose(cp.asnumpy(sm), e / e.sum(-1, keepdims=True),
                               rtol=1e-5, atol=1e-7)
    # The same call on the CPU gives the same bits (strict mode).
    np.testing.assert_array_equal(cp.asnumpy(z), hk.add(xh, yh))
    with pytest.raises(ValueError, match="'x'.*host.*'y'.*GPU"):
        hk.add(xh, y)
    # strided, broadcast and axis calls on the GPU
    b = hk.add(x, y[0])                 # (64, 300) + (300,)
    np.testing.assert_array_equal(b.numpy(), xh + yh[0])
    t = cp.empty((300, 64), cp.float32)
    hk.mul(x.T, y.T, out=t)             # transposed views
    np.testing.assert_array_equal(cp.asnumpy(t), xh.T * yh.T)
    c0 = hk.sum(x, axis=0)
    np.testing.assert_allclose(c0.numpy(), xh.sum(0), rtol=1e-5, atol=1e-5)
    am = hk.argmax(x[:, ::-3], axis=-1)
    np.testing.assert_array_equal(am.numpy(), xh[:, ::-3].argmax(-1))


def test_torch_tensors_run_in_place(plugins):
    torch = _framework("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    ctx = hk.Context(plugins=[plugins])
    k = ctx.kernel("saxpy")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    y = torch.ones(4096, dtype=torch.float32, device="cuda")
    ptr = y.data_ptr()
    torch.cuda.synchronize()
    k(2.0, x, y)                        # NVRTC-compiled, y updated in place
    assert y.data_ptr() == ptr
    np.testing.assert_array_equal(y.cpu().numpy(),
                                  2 * np.arange(4096, dtype=np.float32) + 1)
    h = hk.from_dlpack(y)               # borrowed, no copy
    assert h.ptr == ptr and h.device == "cuda"
    t = torch.from_dlpack(hk.add(h, h))
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), 2 * y.cpu().numpy())
    yd = torch.ones(10, dtype=torch.float64, device="cuda")
    with pytest.raises(hk.ArgumentError, match="'y' is f64 with 'x' f32"):
        k(1.0, torch.ones(10, dtype=torch.float32, device="cuda"), yd)
    ctx.close()
