"""Device and format predicates, cuda(), as_subclass, _make_subclass, and the global state
functions."""

import pytest
import torch

import ember

PREDICATES = ["is_meta", "is_mps", "is_xpu", "is_xla", "is_ipu", "is_mtia",
              "is_maia", "is_vulkan", "is_mkldnn", "is_sparse", "is_sparse_csr",
              "is_quantized", "is_nested"]


def test_predicates_match_torch_on_cpu():
    x, tx = ember.zeros(2), torch.zeros(2)
    for name in PREDICATES:
        assert getattr(x, name) is getattr(tx, name) is False, name
    assert x.name is tx.name is None
    assert ember.get_device(x) == torch.get_device(tx) == -1
    assert x.const_data_ptr() == x.data_ptr()
    with pytest.warns(UserWarning, match="volatile"):
        assert x.volatile is False


def test_cuda_without_a_device_is_a_clear_error():
    with pytest.raises(ember.DeviceError, match=r"cuda\(\): device 'cuda': this build of Ember "
                       "has no cuda backend"):
        ember.zeros(2).cuda()
    with pytest.raises(AssertionError, match="Hint"):  # as torch's "not compiled with CUDA"
        ember.zeros(2).cuda(1)


def test_as_subclass_keeps_memory_and_graph():
    class Tagged(ember.Tensor):
        pass

    x = ember.ones(3, requires_grad=True)
    y = x.as_subclass(Tagged)
    assert type(y) is Tagged and y.requires_grad and y.data_ptr() == x.data_ptr()
    (y * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="does not inherit from ember.Tensor"):
        x.as_subclass(int)


@pytest.mark.parametrize("require_grad", [False, True])
def test_make_subclass_is_a_detached_leaf_on_the_same_memory_as_torchs(require_grad):
    def made(m):
        cls = type("Weight", (m.Tensor,), {})
        x = m.ones(2, requires_grad=True) * 3
        w = m.Tensor._make_subclass(cls, x, require_grad)
        shared = w.data_ptr() == x.data_ptr()
        return type(w) is cls, w.requires_grad, w.is_leaf, w.grad_fn is None, shared, \
            w._base is None, w.tolist()
    assert made(ember) == made(torch)


def test_make_subclass_refuses_what_torch_refuses():
    cls = type("Weight", (ember.Tensor,), {})
    with pytest.raises(TypeError, match="does not inherit from ember.Tensor"):
        ember.Tensor._make_subclass(int, ember.ones(2))
    with pytest.raises(TypeError, match="'data' .* must be Tensor, not list"):
        ember.Tensor._make_subclass(cls, [1.0])
    with pytest.raises(RuntimeError, match="floating"):
        ember.Tensor._make_subclass(cls, ember.ones(2, dtype=ember.int64), True)


def test_anomaly_state_functions_match_torch_defaults():
    assert ember.is_anomaly_enabled() == torch.is_anomaly_enabled() is False
    assert ember.is_anomaly_check_nan_enabled() == torch.is_anomaly_check_nan_enabled()
    try:
        ember.set_anomaly_enabled(True, check_nan=False)
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()


def test_autocast_state_functions():
    assert ember.is_autocast_enabled("cpu") is torch.is_autocast_enabled("cpu") is False
    assert ember.is_autocast_cache_enabled() is torch.is_autocast_cache_enabled()
    a = ember.ones(2, 2)
    try:
        ember.set_autocast_enabled("cpu", True)
        ember.set_autocast_dtype("cpu", ember.float16)
        assert ember.is_autocast_enabled("cpu") and (a @ a).dtype is ember.float16
        with ember.autocast("cpu", enabled=False):
            assert (a @ a).dtype is ember.float32
        assert (a @ a).dtype is ember.float16
    finally:
        ember.set_autocast_enabled("cpu", False)
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    assert (a @ a).dtype is ember.float32 and not ember.is_autocast_enabled()
    from ember.ops.primitive import DISPATCH
    assert DISPATCH.handler is None  # the handler is gone: the eager path pays nothing
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() is ember.bfloat16
    with pytest.raises(ValueError, match="float16"):
        ember.set_autocast_dtype("cpu", ember.float64)
    ember.clear_autocast_cache()


def test_set_flush_denormal_reports_no_effect():
    assert ember.set_flush_denormal(True) is False
    assert ember.set_flush_denormal(False) is False
    tiny = ember.tensor([1e-40])
    assert tiny.item() != 0.0  # denormals keep their values
