"""ember.mps, ember.xpu, ember.overrides and ember.storage answer as torch's do on a CPU-only
machine (each checked against torch)."""
import importlib

import pytest
import torch
import torch.overrides

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_mps_and_xpu_report_no_device_and_seed_quietly(lib):
    for namespace in (lib.mps, lib.xpu):
        assert namespace.is_available() is False and namespace.device_count() == 0
        assert namespace.manual_seed(0) is None
    assert lib.xpu.manual_seed_all(1) is None and lib.xpu.memory_allocated() == 0


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
@pytest.mark.parametrize(("call", "error"), [
    (lambda lib: lib.mps.synchronize(), RuntimeError),
    (lambda lib: lib.mps.current_allocated_memory(), RuntimeError),
    (lambda lib: lib.xpu.synchronize(), AssertionError),  # "Torch not compiled with XPU"
    (lambda lib: lib.xpu.current_device(), AssertionError),
], ids=["mps.synchronize", "mps.memory", "xpu.synchronize", "xpu.current_device"])
def test_what_needs_the_device_raises(lib, call, error):
    with pytest.raises(error):
        call(lib)


def test_the_error_names_the_function():
    with pytest.raises(ember.DeviceError, match=r"ember\.mps\.synchronize: device 'mps'"):
        ember.mps.synchronize()
    with pytest.raises(AssertionError, match="no xpu backend"):
        ember.xpu.get_device_name()


class _Claims:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return (func.__name__, [t.__name__ for t in types], args, kwargs)


class _Declines(_Claims):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


def _guarded(x, y, *, k=1):
    return x


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_overrides_protocol_as_torch(lib):
    ov = lib.overrides
    a, b = _Claims(), _Declines()
    assert not ov.has_torch_function((lib.ones(1), 2)) and ov.has_torch_function((1, a))
    assert not ov.has_torch_function_unary(lib.ones(1)) and ov.has_torch_function_unary(b)
    assert ov.has_torch_function_variadic(1, b) and not ov.has_torch_function_variadic(1, 2)
    # the subclass is asked first; it declines, so the base class answers
    assert ov.handle_torch_function(_guarded, (a, b), a, b, k=2) == (
        "_guarded", ["_Declines", "_Claims"], (a, b), {"k": 2})
    with pytest.raises(TypeError, match="no implementation found for"):
        ov.handle_torch_function(_guarded, (b,), b, 1)
    assert ov.is_tensor_like(lib.ones(1)) and ov.is_tensor_like(a) and not ov.is_tensor_like(1)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_wrap_torch_function_and_method_test_as_torch(lib):
    ov = lib.overrides

    @ov.wrap_torch_function(lambda x, y=None: (x, y))
    def pair(x, y=None):
        return "plain"

    a = _Claims()
    assert pair(1) == "plain" and pair.__name__ == "pair"
    assert pair(1, y=a) == ("pair", ["_Claims"], (1,), {"y": a})
    assert ov.is_tensor_method_or_property(lib.Tensor.add)
    assert ov.is_tensor_method_or_property(lib.Tensor.__add__)
    assert ov.is_tensor_method_or_property(lib.Tensor.shape.__get__)
    assert not ov.is_tensor_method_or_property(lib.add)
    assert not ov.is_tensor_method_or_property(pair)


def test_nested_tensors_are_tensor_like():
    nt = ember.nested.nested_tensor([ember.ones(2), ember.ones(3)])
    assert ember.overrides.is_tensor_like(nt)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_storage_module(lib):
    x = lib.arange(4.0)
    storage = importlib.import_module(f"{lib.__name__}.storage")
    assert isinstance(x.untyped_storage(), storage.UntypedStorage)
    assert storage.UntypedStorage is lib.UntypedStorage
    assert x.untyped_storage().nbytes() == 16


def test_reachable_after_import_as_torch_s():
    for name in ("mps", "xpu", "overrides", "storage", "return_types"):
        assert hasattr(torch, name) and hasattr(ember, name)
