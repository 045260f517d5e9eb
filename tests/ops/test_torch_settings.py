"""PyTorch's process settings (deterministic algorithms, float32 matmul precision, interop
threads, warn_always), inference tensors, and the tensor-state questions (output_nr,
dim_order, is_shared/share_memory_, is_pinned/pin_memory, typename, is_storage)."""

import multiprocessing as mp
import os

import numpy as np
import pytest
import torch

import ember


@pytest.fixture
def restore_settings():
    saved = (ember.are_deterministic_algorithms_enabled(),
             ember.is_deterministic_algorithms_warn_only_enabled(),
             ember.get_float32_matmul_precision(), ember.is_warn_always_enabled())
    yield
    ember.use_deterministic_algorithms(saved[0], warn_only=saved[1])
    ember.set_float32_matmul_precision(saved[2])
    ember.set_warn_always(saved[3])


def test_deterministic_modes_read_back_like_torch(restore_settings):
    for mode in ("default", "warn", "error", 0, 1, 2):
        ember.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        assert ember.are_deterministic_algorithms_enabled() == \
            torch.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled() == \
            torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_deterministic_debug_mode(0)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        ember.set_deterministic_debug_mode("loud")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        ember.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="debug_mode must be str or int"):
        ember.set_deterministic_debug_mode(1.0)
    with pytest.raises(TypeError, match="mode and warn_only must be bools"):
        ember.use_deterministic_algorithms(1)


def test_matmul_precision_and_warn_always(restore_settings):
    assert ember.get_float32_matmul_precision() == "highest"
    ember.set_float32_matmul_precision("medium")
    assert ember.get_float32_matmul_precision() == "medium"
    with pytest.warns(UserWarning, match="fastest is not one of 'highest', 'high'"):
        ember.set_float32_matmul_precision("fastest")
    assert ember.get_float32_matmul_precision() == "medium"
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled()


def test_interop_threads():
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
    with pytest.raises(ValueError, match="expected a positive int, got 0"):
        ember.set_num_interop_threads(0)


def test_inference_tensors():
    x = ember.ones(2, requires_grad=True)
    with ember.inference_mode():
        y = x * 2
        with ember.inference_mode(False):
            z = x * 2
    w = x * 2
    assert y.is_inference() and ember.is_inference(y)
    assert not (x.is_inference() or z.is_inference() or w.is_inference())
    with torch.inference_mode():
        ty = torch.ones(2) * 2
    assert ty.is_inference()  # the same notion in PyTorch

    @ember.inference_mode()
    def made():
        return ember.zeros(1)
    assert made().is_inference()


def test_inference_is_a_property_of_the_memory_as_in_torch():
    for lib in (torch, ember):
        normal = lib.ones(3)
        with lib.inference_mode():
            made = lib.ones(3)
            view_of_normal = normal.view(3)
            inner_view = made[1:]
        outside = (made.view(3), made[0], made.detach(), made.t(), inner_view)
        assert all(t.is_inference() for t in outside), lib.__name__
        assert not (view_of_normal.is_inference() or normal.is_inference()), lib.__name__
        assert not (made.clone().is_inference() or (made * 2).is_inference()), lib.__name__


def test_typename_and_is_storage():
    assert ember.typename(ember.zeros(1, dtype=ember.int64)) == "ember.LongTensor"
    assert ember.typename(3) == torch.typename(3) == "int"
    assert ember.typename(ember.nn.Linear) == "ember.nn.linear.Linear"
    assert ember.typename(ember.nn.Linear(1, 1)) == "ember.nn.linear.Linear"
    assert not ember.is_storage(ember.zeros(1)) and not ember.is_storage([1])


def test_output_nr_and_dim_order_match_torch():
    a = np.zeros((2, 3, 4))
    for view in (lambda t: t, lambda t: t.permute(2, 0, 1), lambda t: t.transpose(0, 1),
                 lambda t: t[:, :1], lambda t: t.expand(2, 2, 3, 4)):
        e, t = view(ember.tensor(a)), view(torch.tensor(a))
        assert e.dim_order() == t.dim_order(), view
    nchw = ember.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))
    assert nchw.dim_order() == (0, 2, 3, 1)
    with pytest.raises(ember.ShapeError, match="does not have a unique dim order"):
        ember.zeros(1, 2).dim_order(ambiguity_check=True)
    with pytest.raises(TypeError, match="ambiguity_check argument must be a bool"):
        ember.zeros(2).dim_order(ambiguity_check="x")
    x = ember.ones(2, 2, requires_grad=True)
    assert x.output_nr == 0
    vals, vecs = ember.linalg.eigh(x)
    assert (vals.output_nr, vecs.output_nr) == (0, 1)


def _child_writes(x):
    x[0] = 42.0


@pytest.mark.skipif(os.name != "posix", reason="fork")
def test_share_memory_is_seen_by_a_forked_process():
    x = ember.zeros(3)
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared()
    assert x.share_memory_() is x  # already shared: nothing to do
    proc = mp.get_context("fork").Process(target=_child_writes, args=(x,))
    proc.start()
    proc.join()
    assert x[0].item() == 42.0


@pytest.mark.parametrize("lib", [torch, ember])
def test_share_memory_moves_the_whole_storage_as_torch(lib):
    # the tensors on the memory (a view's base, other views, detached aliases) move with it:
    # the base stayed in private memory, so writes through it no longer reached its views
    base = lib.zeros(6)
    row, alias, odd = base.view(2, 3)[1], base.detach(), base[1::2]
    assert row.share_memory_() is row and base.is_shared() and odd.is_shared()
    base.fill_(1)
    assert row.tolist() == [1.0] * 3 and alias.tolist() == [1.0] * 6 and odd.tolist() == [1.0] * 3
    assert (odd.stride(), odd.storage_offset(), row.storage_offset()) == ((2,), 1, 3)
    assert lib.arange(6.0).reshape(2, 3).share_memory_().is_shared()  # (a view of a temporary)


@pytest.mark.parametrize("lib", [torch, ember])
def test_share_memory_moves_a_data_alias_and_its_views_as_torch(lib):
    # p.data = a: p and a share the memory, not the version counter; both move, with a's views
    a = lib.zeros(3)
    view = a[1:]
    p = lib.nn.Parameter(lib.zeros(3))
    p.data = a
    p.share_memory_()
    p.data[1] = 7
    assert a.is_shared() and view.is_shared() and a[1].item() == 7 and view[0].item() == 7


@pytest.mark.parametrize("lib", [torch, ember])
def test_share_memory_of_a_meta_tensor_is_refused_naming_it(lib):
    # torch: "_share_fd_: only available on CPU"; Ember named its "storage" helper
    with pytest.raises(RuntimeError, match="share_.*only available on CPU"):
        lib.empty(3, device="meta").share_memory_()


def test_growing_a_shared_tensor_is_refused():
    # torch: "Trying to resize storage that is not resizable" (this build crashes instead);
    # Ember moved it to private memory, which the other processes no longer saw
    x = ember.zeros(4).share_memory_()
    with pytest.raises(RuntimeError, match="resize_: growing a tensor in shared memory"):
        x.resize_(10)
    assert x.resize_(2).is_shared() and x.shape == (2,)  # (shrinking stays in place)


def test_share_memory_keeps_the_layout_as_torch():
    w = ember.nn.Conv2d(3, 4, 3).to(memory_format=ember.channels_last).weight
    values = w.detach().clone()
    t = torch.empty(4, 3, 3, 3).contiguous(memory_format=torch.channels_last)
    assert w.share_memory_().stride() == t.share_memory_().stride() == (27, 1, 9, 3)
    assert ember.equal(w, values)
    made = ember.zeros(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert made._base is None and not made._is_view()  # (a copy: torch's too)
    assert made.share_memory_().stride() == (60, 1, 15, 3)
    transposed = ember.arange(6.0).reshape(2, 3).t().clone()  # (a dense transpose's strides)
    assert transposed.share_memory_().stride() == (1, 3)
    assert transposed.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_pinned_memory_on_the_cpu():
    assert not ember.zeros(2).is_pinned()
    with pytest.raises(ember.DeviceError, match="pin_memory: Ember does not pin host memory"):
        ember.zeros(2).pin_memory()


def test_settings_argument_types_as_torch():
    ember.set_deterministic_debug_mode(True)  # a bool is the int 1 to torch: warn only
    try:
        assert ember.get_deterministic_debug_mode() == 1
    finally:
        ember.set_deterministic_debug_mode(0)
    with pytest.raises(TypeError, match="set_warn_always: expected a bool, got int"):
        ember.set_warn_always(1)
    assert not ember.is_warn_always_enabled()


@pytest.mark.parametrize("call", [lambda m: m.use_deterministic_algorithms(1),
                                  lambda m: m.use_deterministic_algorithms(True, warn_only=1),
                                  lambda m: m.set_deterministic_debug_mode(1.0),
                                  lambda m: m.set_warn_always("yes"),
                                  lambda m: m.set_flush_denormal(None)])
def test_non_bool_flags_raise_argument_type_error(call, restore_settings):
    # (a plain TypeError, outside the project's error classes; ArgumentTypeError is also the
    # RuntimeError torch raises for set_warn_always and set_flush_denormal)
    with pytest.raises((TypeError, RuntimeError)):
        call(torch)
    with pytest.raises(ember.errors.ArgumentTypeError):
        call(ember)
