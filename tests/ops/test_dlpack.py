"""DLPack: ember.from_dlpack and Tensor.__dlpack__ share memory with PyTorch and NumPy both
ways (bfloat16 with PyTorch too); what cannot cross (tensors requiring grad, dtypes Ember
lacks) fails clearly."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int16", "int8", "uint8", "bool"])
def test_torch_to_ember_shares_memory(dtype):
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    e = ember.from_dlpack(t)
    assert e.dtype is getattr(ember, "bool_" if dtype == "bool" else dtype)
    assert e.shape == (2, 3) and e.device.type == "cpu"
    e[1, 2] = 1
    assert t[1, 2].item() == 1


def test_ember_to_torch_and_numpy_shares_memory():
    x = ember.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(x)
    t[0, 0] = -1.0
    a = np.from_dlpack(x)
    a[1, 1] = 100.0
    np.testing.assert_array_equal(x.numpy(), [[-1, 1, 2], [3, 100, 5]])
    assert t[1, 1].item() == 100.0
    assert torch.from_dlpack(x.t()).stride() == x.t().stride() == (1, 3)
    assert x.__dlpack_device__() == (1, 0)


def test_from_numpy_array_and_round_trip():
    a = np.arange(4.0)
    e = ember.from_dlpack(a)
    e[0] = 9.0
    assert a[0] == 9.0
    back = ember.from_dlpack(torch.from_dlpack(e))
    assert back.data_ptr() == e.data_ptr()
    y = ember.ones(2, requires_grad=True)
    with pytest.raises(ember.GradError, match="from_dlpack: can't export .*detach"):
        ember.from_dlpack(y)  # as torch.from_dlpack of a torch tensor that requires grad
    assert not ember.from_dlpack(y.detach()).requires_grad


def test_writes_through_dlpack_are_seen_by_ember_ops():
    x = ember.zeros(3)
    torch.from_dlpack(x).fill_(2.0)
    assert x.sum().item() == 6.0


def test_bfloat16_crosses_to_torch_both_ways():
    x = ember.tensor([[0.5, 1.25], [2.0, -3.0]], dtype=ember.bfloat16)
    t = torch.from_dlpack(x.t())
    assert t.dtype == torch.bfloat16 and t.stride() == (1, 2)
    t[0, 1] = -4.0
    assert x[1, 0].item() == -4.0
    legacy = torch.utils.dlpack.from_dlpack(x.__dlpack__())  # an unversioned capsule
    assert legacy.dtype == torch.bfloat16 and legacy.data_ptr() == x.data_ptr()
    back = ember.from_dlpack(torch.tensor([1.5, 2.5], dtype=torch.bfloat16))
    assert back.dtype is ember.bfloat16 and back.tolist() == [1.5, 2.5]


def test_refusals_are_clear():
    with pytest.raises(ember.GradError, match="__dlpack__: can't export a tensor that requires"):
        torch.from_dlpack(ember.ones(2, requires_grad=True))
    with pytest.raises(ember.DTypeError, match="from_dlpack: could not import .*float8"):
        ember.from_dlpack(torch.ones(2).to(torch.float8_e4m3fn))
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        ember.from_dlpack([1.0, 2.0])


def test_from_dlpack_reports_the_producers_refusal_as_it_is():
    # torch refuses to export a tensor that requires grad: not a dtype problem
    with pytest.raises(ember.errors.OpError, match="from_dlpack: .*require gradient") as info:
        ember.from_dlpack(torch.ones(2, requires_grad=True))
    assert not isinstance(info.value, ember.DTypeError) and "float16/32/64" not in str(info.value)


def test_to_dlpack_capsules_cross_both_ways():
    assert ember.utils.dlpack.to_dlpack is ember.to_dlpack
    assert ember.utils.dlpack.from_dlpack is ember.from_dlpack
    x = ember.arange(4.0)
    t = torch.utils.dlpack.from_dlpack(ember.to_dlpack(x))
    t[0] = -1.0
    assert x[0].item() == -1.0
    source = torch.zeros(2, 2, dtype=torch.bfloat16)
    e = ember.from_dlpack(torch.utils.dlpack.to_dlpack(source))
    assert e.dtype is ember.bfloat16 and e.data_ptr() == source.data_ptr()
    capsule = ember.to_dlpack(x)
    assert ember.from_dlpack(capsule).data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match="unconsumed DLPack capsule.*'used_dltensor'"):
        ember.from_dlpack(capsule)
    with pytest.raises(TypeError, match="to_dlpack: expected an ember.Tensor"):
        ember.to_dlpack(np.ones(2))


def test_strided_views_cross_to_numpy_without_a_copy():
    x = ember.arange(12.0).reshape(3, 4)
    view = x[:, ::2].t()
    a = np.from_dlpack(view)
    assert a.strides == (8, 16) and np.shares_memory(a, x.numpy())
    a[1, 2] = 100.0
    assert x[2, 2].item() == 100.0
    back = ember.from_dlpack(a)
    assert back.stride() == view.stride() and back.data_ptr() == view.data_ptr()


def test_dtypes_numpy_refuses_fail_clearly():
    x = ember.ones(2).to(ember.float8_e4m3fn)
    with pytest.raises(ember.DTypeError, match="__dlpack__: can't export a tensor of dtype "
                       r".*float8_e4m3fn and shape \(2,\).*Hint: convert"):
        np.from_dlpack(x)
    with pytest.raises(ember.DTypeError, match="could not import a DLPack capsule.*Hint"):
        ember.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2).to(torch.float8_e5m2)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool"])
def test_a_tensor_from_a_capsule_is_writable_and_exports_again(dtype):
    # NumPy marks arrays from unversioned capsules (to_dlpack's, PyTorch's) read-only, as
    # such a capsule can't say; PyTorch's import is writable, and so is Ember's
    source = torch.zeros(3, dtype=getattr(torch, dtype))
    e = ember.from_dlpack(torch.utils.dlpack.to_dlpack(source))
    e[1] = 1
    assert source[1].item() == 1 and e.data_ptr() == source.data_ptr()
    back = torch.utils.dlpack.from_dlpack(ember.to_dlpack(e))
    assert back.data_ptr() == source.data_ptr() and back.dtype == source.dtype
    x = ember.arange(3.0)
    ember.from_dlpack(ember.to_dlpack(x))[0] = 7.0
    assert x[0].item() == 7.0


def test_a_read_only_array_stays_read_only():
    a = np.zeros(2)
    a.flags.writeable = False
    with pytest.raises(ember.errors.OpError, match="read-only"):
        ember.from_dlpack(a)[0] = 1.0


@pytest.mark.parametrize("copy", [None, False, True])
@pytest.mark.parametrize("device", [None, "cpu"])
def test_from_dlpack_copy_and_device_as_pytorch(copy, device):
    for make in (lambda: np.arange(6.0).reshape(2, 3)[:, ::2], lambda: torch.arange(4.0)):
        source = make()
        t = torch.from_dlpack(source, copy=copy, device=device)
        e = ember.from_dlpack(source, copy=copy, device=device)
        source[0] += 100  # seen only where the memory is shared
        assert e.tolist() == t.tolist() and e.device == ember.device("cpu")
    e = ember.utils.dlpack.from_dlpack(ember.arange(3.0), copy=True)
    assert e.tolist() == [0.0, 1.0, 2.0]


def test_from_dlpack_copy_false_refuses_a_device_move_and_copy_must_be_a_bool_as_torch():
    with pytest.raises(BufferError):  # (torch packs nothing on meta; cuda: "without copying")
        torch.from_dlpack(np.arange(3.0), device="meta", copy=False)
    with pytest.raises(ValueError, match="without copying. Set copy=None or copy=True"):
        ember.from_dlpack(np.arange(3.0), device="meta", copy=False)
    assert ember.from_dlpack(np.arange(3.0), device="cpu", copy=False).device.type == "cpu"
    with pytest.raises(ValueError, match="strings are not allowed for 'copy'"):
        torch.from_dlpack(np.arange(3.0), copy="yes")
    with pytest.raises(ValueError, match="copy must be True, False or None, got 'yes'"):
        ember.from_dlpack(np.arange(3.0), copy="yes")


def test_from_dlpack_to_a_device_without_a_backend_is_named():
    with pytest.raises(ember.DeviceError, match="cuda"):
        ember.from_dlpack(np.arange(3.0), device="cuda")


def test_to_dlpack_exports_a_tensor_that_requires_grad_as_torch():
    # torch.utils.dlpack.to_dlpack(param) shares the memory (only __dlpack__ refuses);
    # Ember's to_dlpack raised GradError
    t_param, e_param = torch.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    t_back = torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t_param))
    e_back = ember.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(e_param))
    assert e_back.requires_grad is t_back.requires_grad is False
    assert e_back.data_ptr() == e_param.data_ptr()
    shared = torch.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(e_param))
    shared[0] = 5.0
    assert e_param.tolist() == [5.0, 1.0]
