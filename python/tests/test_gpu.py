"""GPU arrays: __cuda_array_interface__ and DLPack. Without a GPU the
CPU-side checks run: fake device arrays give clear errors, DLPack host
arrays run in place."""
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
    with pytest.raises(hk.UnsupportedError, match="'x'.*DLPack"):
        hk.neg(DLCuda(np.ones(3, np.float32)),
               out=DLCuda(np.ones(3, np.float32)))


def test_gpu_checks_before_the_device():
    with pytest.raises(ValueError, match="'out' must be given on the GPU"):
        hk.add(FakeCuda((4,)), FakeCuda((4,)))
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
