"""Differences from torch.autograd found by the sweep of session 48 (helper autograd48)."""

import pytest
import torch

import ember


def _pack_log(lib, fn):
    """The shapes the pack hook saw and x's gradient, under an unpack hook that doubles."""
    log = []
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append(tuple(t.shape)) or t,
                                                lambda t: t * 2):
        y = fn(lib, x * 1).sum()
    y.backward()
    return log, x.grad.tolist()


@pytest.mark.parametrize("fn", [
    lambda lib, a: a * 2.5, lambda lib, a: 2 * a, lambda lib, a: a / 2,
    lambda lib, a: a * lib.tensor(2.0, dtype=lib.float64), lambda lib, a: a ** 2,
    lambda lib, a: a.clamp(min=1.5)])
def test_python_numbers_do_not_go_through_saved_tensor_hooks(fn):
    # torch passes no wrapped number to pack hooks: an unpack hook that changes values
    # changed the 2.5 in x * 2.5 (gradient 5.0 for torch's 2.5)
    assert _pack_log(ember, fn) == _pack_log(torch, fn)


def _fn(lib, forward, backward):
    return type("F", (lib.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


@pytest.mark.parametrize("lib", [torch, ember])
def test_backward_returning_a_number_is_a_clear_error(lib):
    # ember crashed with AttributeError: 'float' object has no attribute 'detach'
    f = _fn(lib, lambda ctx, a: a * 2, lambda ctx, g: 3.0)
    x = lib.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="float"):
        f.apply(x).sum().backward()


@pytest.mark.parametrize("lib", [torch, ember])
def test_saved_tensors_after_a_freeing_backward_raise(lib):
    # ember returned () silently
    box = []

    def forward(ctx, a):
        ctx.save_for_backward(a)
        box.append(ctx)
        return a * a

    f = _fn(lib, forward, lambda ctx, g: 2 * ctx.saved_tensors[0] * g)
    x = lib.ones(3, requires_grad=True)
    f.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="freed"):
        _ = box[0].saved_tensors


def _view_fn(lib, as_is):
    return _fn(lib, (lambda ctx, a: a) if as_is else (lambda ctx, a: a.view(3)),
               lambda ctx, g: g * 5)


def _view_output(lib, as_is):
    """z = x * 1 and y, F's output that is z (as_is) or a view of z."""
    z = lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
    return z, _view_fn(lib, as_is).apply(z)


@pytest.mark.parametrize("as_is", [False, True])
@pytest.mark.parametrize("lib", [torch, ember])
def test_custom_function_view_output_written_in_place_raises(lib, as_is):
    # ember wrote, and z (whose memory y shares) kept a stale history: silent wrong gradients
    z, y = _view_output(lib, as_is)
    assert y._base is z
    with pytest.raises(RuntimeError, match="Output 0 of F is a view and is being modified"):
        y.mul_(2)
    with pytest.raises(RuntimeError, match="is a view and is being modified"):
        y[:2].add_(1)  # a view of the output too
    with lib.no_grad():
        y.mul_(2)  # without grad it is allowed
    with pytest.raises(RuntimeError, match="its base or another view of its base has been"):
        (y * 1).sum().backward()  # but y is then unusable with grad


@pytest.mark.parametrize("as_is", [False, True])
@pytest.mark.parametrize("lib", [torch, ember])
def test_custom_function_view_output_of_a_written_base_raises(lib, as_is):
    # ember gave x.grad 5 (torch refuses; the data were 2 z, the history F's)
    z, y = _view_output(lib, as_is)
    z.mul_(2)
    with pytest.raises(RuntimeError, match="its base or another view of its base has been"):
        (y * 1).sum().backward()


def test_custom_function_view_output_gradient_unchanged():
    for as_is in (False, True):
        grads = []
        for lib in (torch, ember):
            x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
            (_view_fn(lib, as_is).apply(x * 1) ** 2).sum().backward()
            grads.append(x.grad.tolist())
        assert grads[0] == grads[1]


@pytest.mark.parametrize("lib", [torch, ember])
def test_backward_inputs_that_do_not_require_grad_raise(lib):
    # ember returned with w.grad None
    x, w = lib.ones(3, requires_grad=True), lib.ones(3)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        (x * w).sum().backward(inputs=[w])


@pytest.mark.parametrize("saves", ["input", "output", "function"])
@pytest.mark.parametrize("lib", [torch, ember])
def test_pack_hook_writing_in_place_raises(lib, saves):
    # ember let the write through: exp's saved output doubled y itself
    def pack(t):
        t.mul_(2)
        return t

    f = _fn(lib, lambda ctx, a: ctx.save_for_backward(a) or a * 2, lambda ctx, g: g * 2)
    op = {"input": lambda a: a.sin(), "output": lambda a: a.exp(), "function": f.apply}[saves]
    x = lib.ones(3, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook"):
            op(x * 1)
