"""The engine's gradient sums: a sum it made itself takes further terms in place, and a slice's
gradient is added into its region of one buffer (no zero-padded copy per slice). Values must
match PyTorch, and no tensor anyone else holds (a root gradient, a hook's argument, a retained
``.grad``) may change."""

import contextlib

import numpy as np
import pytest
import torch

import ember
import ember.func

VALUES = np.random.default_rng(0).standard_normal((4, 6, 9))


def slices_of(lib, x):
    """Overlapping slices of ``x``: split, int, steps, None and Ellipsis indices."""
    y = x * 2
    q, k, v = y.split(3, dim=2)
    return ((q * k).sum() + (v ** 2).sum() + y[1:3, :, 2:7].sum() + (y[0] * y[-1]).sum()
            + y[::2, None, ..., 1].sum() + y[..., 1::3].sum() * 3)


def torch_grad(fn=slices_of):
    x = torch.tensor(VALUES, requires_grad=True)
    fn(torch, x).backward()
    return x.grad.numpy()


def test_slice_gradients_match_torch():
    x = ember.tensor(VALUES, requires_grad=True)
    slices_of(ember, x).backward()
    np.testing.assert_allclose(x.grad.numpy(), torch_grad(), rtol=1e-12)


def test_slice_gradients_skip_the_zero_padded_copies():
    x = ember.tensor(VALUES, requires_grad=True)
    loss = slices_of(ember, x)
    with ember.profiler.profile() as prof:  # the profiler only watches: sums stay in place
        loss.backward()
    names = {e.name for e in prof.events()}
    assert "SliceBackward0" not in names and "index_put" not in names
    np.testing.assert_allclose(x.grad.numpy(), torch_grad(), rtol=1e-12)


def test_create_graph_sums_are_recorded_ops():
    x = ember.tensor(VALUES, requires_grad=True)
    (g,) = ember.autograd.grad(slices_of(ember, x), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), torch_grad(), rtol=1e-12)
    (gg,) = ember.autograd.grad((g * g).sum(), [x])
    xt = torch.tensor(VALUES, requires_grad=True)
    (gt,) = torch.autograd.grad(slices_of(torch, xt), [xt], create_graph=True)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), [xt])
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-12)


def test_slices_of_a_leaf_accumulate_into_grad():
    w = ember.tensor(VALUES, requires_grad=True)
    (w[0] * 3).sum().backward()
    (w[:2].sum() + w[1:].sum() * 2 + w[..., :4].sum()).backward()
    wt = torch.tensor(VALUES, requires_grad=True)
    (wt[0] * 3).sum().backward()
    (wt[:2].sum() + wt[1:].sum() * 2 + wt[..., :4].sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12)


def test_tensors_others_hold_are_never_summed_into():
    x = ember.tensor(VALUES, requires_grad=True)
    y = x * 1
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append((g, g.numpy().copy())))
    root = ember.ones(4, 6, 9, dtype=ember.float64)
    z = y + y[0:4] + y[:, :] + y * 1 + y
    z.backward(root)
    np.testing.assert_array_equal(root.numpy(), np.ones((4, 6, 9)))
    (g, copy), = seen
    np.testing.assert_array_equal(g.numpy(), copy)
    np.testing.assert_array_equal(y.grad.numpy(), np.full((4, 6, 9), 5.0))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 6, 9), 5.0))


def test_many_uses_of_one_tensor_sum_like_torch():
    def uses(lib, x):
        y = x.exp()
        return sum((y * float(i)).sum() for i in range(1, 6)) + (y[1] * y[2]).sum()

    x = ember.tensor(VALUES, requires_grad=True)
    uses(ember, x).backward()
    np.testing.assert_allclose(x.grad.numpy(), torch_grad(uses), rtol=1e-12)


def test_vmap_of_grad_through_slices():
    def f(x):
        return slices_of(ember, x)

    batch = np.stack([VALUES, VALUES * 0.5])
    grads = ember.func.vmap(ember.func.grad(f))(ember.tensor(batch))
    for b in range(2):
        x = torch.tensor(batch[b], requires_grad=True)
        slices_of(torch, x).backward()
        np.testing.assert_allclose(grads[b].numpy(), x.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reuse", [False, True])
def test_compiled_step_through_slices_matches_eager(reuse):
    w = ember.tensor(VALUES, requires_grad=True)

    def step():
        loss = slices_of(ember, w)
        loss.backward()
        return loss

    eager = step().item(), w.grad.numpy().copy()
    w.grad = None
    compiled = ember.jit.compile(step)
    for _ in range(2 if reuse else 1):
        w.grad = None
        loss = compiled()
    assert loss.item() == pytest.approx(eager[0], rel=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), eager[1], rtol=1e-12)


@pytest.mark.parametrize("through", ["leaf", "intermediate"])
def test_anomaly_mode_still_checks_a_slices_gradient(through):
    x = ember.ones(4, 8, requires_grad=True)
    source = x if through == "leaf" else x * 1
    piece = source[0:2]
    piece.register_hook(lambda g: g * float("nan"))
    with ember.autograd.detect_anomaly(), pytest.raises(ember.GradError, match="slice"):
        piece.sum().backward()


def test_backward_into_chosen_inputs_hands_each_grad_its_own_memory():
    a, b = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    root = ember.ones(3)
    (a + b).backward(root, inputs=[a, b])
    a.grad.mul_(10)
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(root.numpy(), np.ones(3))


def test_backward_into_inputs_listed_twice_or_retaining_adds_once_like_torch():
    def run(lib):
        a = lib.ones(2, requires_grad=True)
        h = a * 2
        h.retain_grad()
        (h * 3).sum().backward(inputs=[a, h, a])
        return a.grad.numpy(), h.grad.numpy()

    for mine, ref in zip(run(ember), run(torch)):
        np.testing.assert_array_equal(mine, ref)


@pytest.mark.parametrize("observed", [False, True])
def test_a_broadcast_first_gradient_lands_in_grad_as_its_own_c_ordered_array(observed):
    # plain eager code copies it without the op (the profiler still sees the op): either
    # way a writable C-ordered array of its own, no view, and the next sum goes into it
    x = ember.ones(8, 16, requires_grad=True)
    with ember.profiler.profile() if observed else contextlib.nullcontext() as prof:
        x.sum().backward()
    a = x.grad._data
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.owndata
    assert x.grad._view is None and not x.grad.requires_grad and x.grad.grad_fn is None
    if observed:
        assert any("copy" in e.name or "contiguous" in e.name for e in prof.events())
    (x * 2).sum().backward()
    assert x.grad._data is a and x.grad.tolist() == [[3.0] * 16] * 8
