"""The hardware-abstraction layer: devices, capabilities, threads, kernel choice."""

import numpy as np
import pytest

import ember
from ember.backend import capabilities, compute_dtype


def test_devices_are_singletons_with_torch_like_repr():
    cpu = ember.device("cpu")
    assert cpu is ember.device("cpu") and repr(cpu) == "device(type='cpu')" and str(cpu) == "cpu"
    assert ember.backend.get_default_device() is cpu
    assert cpu.xp.__name__ == "numpy"
    with pytest.raises(ember.DeviceError, match="unknown device type 'tpu'"):
        ember.device("tpu")


def test_capability_report():
    caps = capabilities("cpu")
    assert ember.float32 in caps.dtypes_stored and ember.bfloat16 in caps.dtypes_stored
    assert caps.computes_fast(ember.float32) and not caps.computes_fast(ember.bfloat16)
    assert caps.cores >= 1 and caps.memory_bytes > 0 and caps.blas_threads >= 1
    assert caps.simd and caps.blas
    text = caps.report()
    for word in ["BLAS", "SIMD", "cores", "memory", "bfloat16"]:
        assert word in text


def test_kernel_choice_by_capability():
    cpu = ember.device("cpu")
    assert compute_dtype(cpu, ember.float32) is ember.float32
    assert compute_dtype(cpu, ember.bfloat16) is ember.float32
    assert compute_dtype(cpu, ember.float16, "gemm") is ember.float32
    assert compute_dtype(cpu, ember.int64) is ember.int64


def test_thread_control():
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(before)
    with pytest.raises(ValueError):
        ember.set_num_threads(0)


def test_device_mismatch_is_a_clear_error():
    from ember.backend.device import Device
    from ember.tensor import _wrap

    other = Device("fake", 0, ember.device("cpu").xp)
    a = ember.ones(2)
    b = _wrap(ember.ones(2).numpy(), other)
    with pytest.raises(ember.DeviceError, match="input 1 on fake:0"):
        a + b


@pytest.mark.parametrize(("shape", "to"), [
    ((), (8, 16)), ((1, 16), (8, 16)), ((2, 1, 3), (2, 5, 3)), ((3,), (2, 0, 3)),
    ((1,), (0,)), ((2, 1), (2, 1)), ((0, 3), (2, 0, 3)), ("F", (4, 3, 2)),
    ((2, 3), (3, 3)), ((2, 3), (3,)), ((2, 3), (2, -1))])
def test_broadcast_view_is_numpys_broadcast_to_strided_as_torchs_expand(shape, to):
    import torch

    from ember.backend.cpu import broadcast_view

    a = np.arange(6.0).reshape(2, 3).T if shape == "F" else np.ones(shape, np.float32)
    try:
        want = np.broadcast_to(a, to)
    except ValueError as exc:  # (NumPy's error, from NumPy)
        with pytest.raises(ValueError, match=str(exc)[:20]):
            broadcast_view(a, to)
        return
    got = broadcast_view(a, to)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    # (a size-1 dimension kept is strided as PyTorch's expand strides it; NumPy's gives 0)
    torch_strides = torch.from_numpy(a).expand(to).stride()
    assert got.strides == tuple(s * a.itemsize for s in torch_strides)
    assert not got.flags.writeable and np.may_share_memory(got, a) == np.may_share_memory(want, a)
    assert (got.base is a) == (want.base is a)
    np.testing.assert_array_equal(got, want)
