"""``autograd.grad`` options and ``.grad`` accumulation around ``create_graph``, against
torch: materialized zeros require grad under ``create_graph``; a plain backward adds into a
``.grad`` that ``create_graph`` left with history in place (the same tensor, as PyTorch's)."""

import re
import warnings

import numpy as np
import pytest
import torch

import ember


def _materialized(lib, create_graph):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([3.0, 4.0, 5.0], requires_grad=True)
    gx, gy = lib.autograd.grad((x * x).sum(), [x, y], materialize_grads=True,
                               create_graph=create_graph)
    return gy.tolist(), gx.requires_grad, gy.requires_grad, gy.grad_fn is None


def test_materialized_zeros_require_grad_under_create_graph():
    for create_graph in (False, True):
        assert _materialized(ember, create_graph) == _materialized(torch, create_graph)


def _accumulated(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([3.0, 4.0])
    (x * x).sum().backward(create_graph=True)
    first = x.grad
    (x * y).sum().backward()
    return x.grad is first, x.grad.requires_grad, first.tolist(), x.grad.tolist()


def test_plain_backward_adds_in_place_into_a_grad_with_history():
    assert _accumulated(ember) == _accumulated(torch) == (True, True, [5.0, 8.0], [5.0, 8.0])


def test_create_graph_sums_and_second_order_still_match_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        (x ** 2).sum().backward(create_graph=True)  # 3x^2 + 2x, with history
        g = x.grad
        x.grad = None
        g.sum().backward()
        return g.detach().numpy(), x.grad.numpy()

    for got, want in zip(run(ember), run(torch)):
        np.testing.assert_allclose(got, want)


def test_gradient_edges_as_outputs_as_in_torch():
    # (an AttributeError: GradientEdge has no requires_grad)
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        z = x.exp()
        edge = lib.autograd.graph.get_gradient_edge(z)
        (g,) = lib.autograd.grad(edge, x, lib.tensor([1.0, 3.0], dtype=lib.float64),
                                 retain_graph=True)
        lib.autograd.backward(edge, lib.ones(2, dtype=lib.float64))
        (leaf,) = lib.autograd.grad(lib.autograd.graph.get_gradient_edge(x), x,
                                    lib.ones(2, dtype=lib.float64))
        return g.numpy(), x.grad.numpy(), leaf.numpy()

    for got, want in zip(run(ember), run(torch)):
        np.testing.assert_allclose(got, want)
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(ember.errors.GradError, match="pass its gradient"):
        ember.autograd.grad(ember.autograd.graph.get_gradient_edge(x * 2), x)


@pytest.mark.parametrize("make", ["exp", "sort", "unbind"])
def test_a_gradient_edge_of_the_wrong_shape_is_refused_at_entry(make):
    # (the error came from deep inside backward: "backward of exp failed: ... chain: mul")
    def edge(lib):
        x = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        out = {"exp": lambda: x.exp(), "sort": lambda: x.sort(1)[0],
               "unbind": lambda: x.unbind(0)[1]}[make]()
        return x, lib.autograd.graph.get_gradient_edge(out)

    x, e = edge(torch)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        torch.autograd.grad(e, x, torch.ones(5, dtype=torch.float64))
    x, e = edge(ember)
    want = "(3, 2)" if make != "unbind" else "(2,)"
    with pytest.raises(ember.errors.ShapeError, match=rf"gradient of shape \(5,\) given for "
                       rf"output 0, a GradientEdge .* of shape {re.escape(want)}"):
        ember.autograd.grad(e, x, ember.ones(5, dtype=ember.float64))


@pytest.mark.parametrize("inputs", [list, tuple, lambda: (t for t in ())])
@pytest.mark.parametrize("batched", [False, True])
def test_grad_with_no_inputs_raises_as_torch(inputs, batched):
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        out = (x * 2).sum() if not batched else x * 2
        extra = {"grad_outputs": lib.eye(2), "is_grads_batched": True} if batched else {}
        with pytest.raises(RuntimeError, match="cannot be empty"):
            lib.autograd.grad(out, inputs(), **extra)


def _cycle_warnings(lib, call, monkeypatch):
    if lib is ember:
        monkeypatch.setattr("ember.autograd.engine.CYCLE_WARNED", [False])
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call(lib, x)
        lib.autograd.grad((x ** 3).sum(), x, create_graph=True)  # no warning: no .grad
        call(lib, x)  # once a process, as PyTorch's TORCH_WARN_ONCE
    # (torch's C++ warning ends with " (Triggered internally at <its source>.)")
    return [re.sub(r" \(Triggered internally at .*\)$", "", str(w.message))
            for w in record if "reference cycle" in str(w.message)]


@pytest.mark.parametrize("call", [
    lambda lib, x: (x ** 2).sum().backward(create_graph=True),
    lambda lib, x: lib.autograd.backward((x ** 2).sum(), create_graph=True, inputs=[x]),
])
def test_backward_create_graph_warns_of_the_reference_cycle_once(call, monkeypatch):
    # a filter written for PyTorch's words matches Ember's
    mine = _cycle_warnings(ember, call, monkeypatch)
    assert len(mine) == 1
    assert re.match(r"Using backward\(\) with create_graph=True will create a reference cycle",
                    mine[0])
    theirs = _cycle_warnings(torch, call, monkeypatch)
    assert len(theirs) <= 1 and (not theirs or theirs == mine)


@pytest.mark.parametrize("call", [
    lambda x: (x ** 2).sum().backward(create_graph=True),
    lambda x: ember.autograd.backward((x ** 2).sum(), create_graph=True),
])
def test_reference_cycle_warning_points_at_the_callers_line(call, monkeypatch):
    monkeypatch.setattr("ember.autograd.engine.CYCLE_WARNED", [False])
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call(x)
    assert [w.filename for w in record if "reference cycle" in str(w.message)] == [__file__]


def _grad_reads(lib):
    """Which ``.grad`` reads warn (PyTorch: a non-leaf that retains no grad, and has none)."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y, kept, given = x * 2, x * 3, x * 4
    kept.retain_grad()
    with warnings.catch_warnings(record=True) as record:  # (backward reads no .grad aloud)
        warnings.simplefilter("always")
        (y * kept * given).sum().backward(inputs=[x, given])
    out = [[str(w.message) for w in record]]
    for t in (x, y, kept, given, x.detach(), lib.ones(2), y.detach()):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            got = t.grad
        out.append((got is None, [str(w.message) for w in record]))
    return out


def test_reading_grad_of_a_non_leaf_warns_in_pytorchs_words():
    (during, *mine), (_, *theirs) = _grad_reads(ember), _grad_reads(torch)
    assert during == []
    assert mine[1][1] and mine[1][1][0].startswith(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.")
    assert [(none, bool(w)) for none, w in mine] == [(none, bool(w)) for none, w in theirs]
    assert theirs[1][1][0].startswith(mine[1][1][0])


@pytest.mark.parametrize("call", ["grad", "backward"])
def test_extra_gradients_are_ignored_fewer_refused_as_torch(call):
    """(Ember refused more gradients than outputs: "got 1 tensors but 2 gradients"; torch
    ignores the extra ones, unchecked, and refuses fewer)."""
    def run(lib, grads):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()
        if call == "grad":
            return lib.autograd.grad([y], [x], grad_outputs=grads)[0].tolist()
        lib.autograd.backward([y], grad_tensors=grads)
        return x.grad.tolist()

    for lib in (ember, torch):
        assert run(lib, [lib.tensor(2.0), lib.ones(5, 5)]) == [6.0, 6.0]
        assert run(lib, [lib.tensor(2.0), None]) == [6.0, 6.0]
    with pytest.raises(ember.GradError, match="got 2 tensors but 1 gradients"):
        x = ember.tensor([1.0], requires_grad=True)
        ember.autograd.grad([x * 2, x * 3], [x], grad_outputs=[ember.ones(1)])


@pytest.mark.parametrize("shape", [(3,), (2, 1), (2, 3, 1), (2, 1, 3)])
def test_batched_grad_outputs_must_be_a_batch_of_the_outputs_shape_as_torch(shape):
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        return lib.autograd.grad(x * 2, x, lib.ones(*shape), is_grads_batched=True)

    with pytest.raises(RuntimeError, match="is_grads_batched"):
        run(torch)
    with pytest.raises(RuntimeError, match=re.escape(f"grad_outputs[0] has shape {shape}, "
                                                     "output 0 (3,)")):
        run(ember)


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64"),
                                    ("float64", "int64")])
def test_a_given_gradient_is_cast_to_its_outputs_dtype_as_torch(dtypes):
    # a float32 gradient for a float64 output ran the whole pass in float32 (x / 3: 0.33333334)
    out_dtype, grad_dtype = dtypes
    grads = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], dtype=getattr(lib, out_dtype), requires_grad=True)
        (x / 3).backward(lib.ones(2, dtype=getattr(lib, grad_dtype)))
        grads.append(x.grad.numpy())
    assert grads[1].dtype == grads[0].dtype
    np.testing.assert_array_equal(grads[1], grads[0])


def test_a_complex_gradient_for_a_real_output_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="same dtype"):
        (torch.ones(2, requires_grad=True) * 2).backward(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(RuntimeError, match="both must be complex"):
        (ember.ones(2, requires_grad=True) * 2).backward(ember.ones(2, dtype=ember.complex64))
    grads = []  # (complex of another precision: cast, as torch)
    for lib in (torch, ember):
        x = lib.ones(3, dtype=lib.complex64, requires_grad=True)
        (x * 2).backward(lib.ones(3, dtype=lib.complex128))
        grads.append(x.grad.numpy())
    assert grads[1].dtype == grads[0].dtype
    np.testing.assert_array_equal(grads[1], grads[0])


def test_a_gradient_given_for_a_gradient_edge_is_cast_to_its_outputs_dtype_as_torch():
    out = []
    for lib in (torch, ember):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        edge = lib.autograd.graph.get_gradient_edge(x / 3)
        out.append(lib.autograd.grad(edge, x, lib.ones(3, dtype=lib.float32))[0].numpy())
    np.testing.assert_array_equal(out[1], out[0])


def test_a_gradient_that_is_not_a_tensor_is_a_type_error_as_torch():
    with pytest.raises(TypeError):
        (torch.ones(2, requires_grad=True) * 2).backward([1.0, 1.0])
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        (ember.ones(2, requires_grad=True) * 2).backward([1.0, 1.0])
