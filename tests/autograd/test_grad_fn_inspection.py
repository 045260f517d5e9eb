"""Inspecting and calling a ``grad_fn`` as in PyTorch: ``_saved_<name>`` (what a node keeps for
its backward) and ``grad_fn(*grads)`` (its backward on given gradients)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import GradError


def _pair(lib):
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, 4.0, -1.0], requires_grad=True)
    return x, w


@pytest.mark.parametrize("lib", [torch, ember])
def test_inputs_result_and_parameters_as_pytorch_names_them(lib):
    x, w = _pair(lib)
    y = x * w
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    assert {"_saved_self", "_saved_other"} <= set(dir(y.grad_fn))
    e = x.exp()
    assert e.grad_fn._saved_result.tolist() == e.tolist()
    assert "_saved_result" in dir(e.grad_fn)
    p = x.pow(3)
    assert p.grad_fn._saved_exponent == 3 and p.grad_fn._saved_self is x
    with pytest.raises(AttributeError):
        _ = y.grad_fn._saved_nothing


@pytest.mark.parametrize("lib", [torch, ember])
def test_reading_after_backward_freed_them_raises(lib):
    x, w = _pair(lib)
    y = x * w
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        _ = y.grad_fn._saved_self
    kept = x * w
    kept.sum().backward(retain_graph=True)
    assert kept.grad_fn._saved_other is w


def test_freed_error_is_a_grad_error_naming_the_node():
    x, w = _pair(ember)
    y = x * w
    y.sum().backward()
    with pytest.raises(GradError, match="MulBackward0._saved_self"):
        _ = y.grad_fn._saved_self


def _as_lists(result):
    if not isinstance(result, tuple):
        return _as_lists((result,))
    return [None if g is None else np.round(g.detach().numpy(), 5).tolist() for g in result]


@pytest.mark.parametrize("make", [
    lambda lib, x, w: x * w,
    lambda lib, x, w: x.exp(),
    lambda lib, x, w: x * 2,
    lambda lib, x, w: x + lib.ones(4, 3),
    lambda lib, x, w: x.sum(),
], ids=["mul", "exp", "scalar", "broadcast", "sum"])
def test_calling_a_grad_fn_gives_its_input_gradients(make):
    got = {}
    for lib in (torch, ember):
        x, w = _pair(lib)
        out = make(lib, x, w)
        grads = out.grad_fn(lib.ones(out.shape) + 1)
        if lib is torch and isinstance(grads, tuple):  # (PyTorch's backward sums them later)
            grads = tuple(g if g is None else g.sum_to_size(x.shape) for g in grads)
        got[lib] = _as_lists(grads)
    assert got[torch] == got[ember]


def test_calling_a_grad_fn_with_the_wrong_count_or_after_backward_raises():
    x, w = _pair(ember)
    y = x * w
    with pytest.raises(TypeError, match="expected 1 gradients"):
        y.grad_fn(ember.ones(3), ember.ones(3))
    y.sum().backward()
    with pytest.raises(GradError, match="retain_graph=True"):
        y.grad_fn(ember.ones(3))


@pytest.mark.parametrize("lib", [torch, ember])
def test_an_input_the_rule_does_not_read_is_saved_as_none(lib):
    # (a large input of x * 2, which its rule never reads: PyTorch saves nothing for it)
    x = lib.randn(100_000, requires_grad=True)
    y = (x * 1) * 2
    assert y.grad_fn._saved_self is None


@pytest.mark.parametrize("key", [lambda i: i, lambda i: (slice(None), i), lambda i: (i, i),
                                 lambda i: (i, slice(None), i)])
def test_index_node_saves_what_pytorch_names(key):
    got = {}
    for lib in (torch, ember):
        x = lib.arange(24.0).reshape(2, 3, 4).requires_grad_()
        n = x[key(lib.tensor([1, 0]))].grad_fn
        assert (type(n).__name__ if lib is torch else n.name()) == "IndexBackward0"
        names = [a for a in dir(n) if a.startswith("_saved_")]
        assert names == ["_saved_indices", "_saved_self_sym_sizes"]
        got[lib] = [None if i is None else i.tolist() for i in n._saved_indices], \
            tuple(n._saved_self_sym_sizes)
        with pytest.raises(AttributeError):
            _ = n._saved_self
    assert got[ember] == got[torch]


@pytest.mark.parametrize("case", ["plain", "bias", "depthwise", "conv1d", "conv3d"])
def test_convolution_saved_values_have_torchs_names(case):
    names = ["input", "weight", "stride", "padding", "dilation", "groups", "transposed",
             "output_padding", "bias_sym_sizes_opt"]
    xs, ws, kw = {"plain": ((1, 2, 6, 6), (3, 2, 3, 3), dict(padding=1, stride=2)),
                  "bias": ((1, 2, 6, 6), (3, 2, 3, 3), dict(padding=(1, 0), dilation=2)),
                  "depthwise": ((2, 3, 6, 6), (3, 1, 3, 3), dict(groups=3, padding=1)),
                  "conv1d": ((1, 2, 7), (3, 2, 3), dict(padding=2)),
                  "conv3d": ((1, 2, 4, 4, 4), (3, 2, 3, 3, 3), dict(stride=(1, 2, 1)))}[case]

    def saved(lib):
        x, w = lib.ones(*xs, requires_grad=True), lib.ones(*ws, requires_grad=True)
        b = lib.ones(ws[0], requires_grad=True) if case in ("bias", "depthwise") else None
        conv = {3: lib.nn.functional.conv1d, 4: lib.nn.functional.conv2d,
                5: lib.nn.functional.conv3d}[len(xs)]
        node = conv(x, w, b, **kw).grad_fn
        got = [getattr(node, "_saved_" + n) for n in names]
        assert got[0] is x and got[1] is w
        return [tuple(v) if isinstance(v, (list, tuple)) else v for v in got[2:]]

    assert saved(ember) == saved(torch)


def test_convolution_nodes_differ_from_torch_where_the_docs_say():
    # docs/tensors_and_autograd.md names these exceptions to "a convolution's node has
    # PyTorch's names"; both the depthwise weight-frozen conv and a node's own input read
    # through one Node.saved_input (None where the rule does not read it)
    F = ember.nn.functional
    x = ember.ones(1, 4, 6, 6, requires_grad=True)
    assert F.conv2d(x, ember.ones(4, 2, 3, 3), groups=2).grad_fn.name() == "ViewBackward0"
    assert F.conv_transpose2d(x, ember.ones(4, 2, 3, 3)).grad_fn.name() == "FoldBackward0"
    node = F.conv2d(x, ember.ones(4, 4, 2, 2), padding="same").grad_fn
    assert node.name() == "ConvolutionBackward0" and node._saved_input.shape == (1, 4, 6, 6)
    t = torch.nn.functional.conv2d(torch.ones(1, 4, 6, 6, requires_grad=True),
                                   torch.ones(4, 4, 2, 2), padding="same").grad_fn
    assert t._saved_input.shape == (1, 4, 7, 7)
    node = F.conv2d(x, ember.ones(4, 1, 3, 3, requires_grad=True), groups=4).grad_fn
    assert node._saved_input is node.saved_input(0) and node._saved_weight is node.saved_input(1)
