"""In-place ops on views and on tensors other nodes already use: gradients as PyTorch's."""

import weakref

import numpy as np
import pytest
import torch

import ember
from ember.autograd.forward import jvp
from tests.gc_off import gc_off


def _write_through_view(x, m):
    y = x * 1
    y.view(4)[0:2].mul_(3)
    return y * y


def _base_changed_after_view(x, m):
    y = x * 1
    v = y[0]
    y.mul_(2)
    return v * 5


def _setitem_on_view(x, m):
    y = x * 1
    y[0][1] = 7.0
    return y * x


def _view_of_plain_tensor_takes_grad(x, m):
    y = m.zeros(2, 2, dtype=x.dtype)
    y[1].add_(x[0])
    return y * 2


def _transposed_view(x, m):
    y = x * 1
    y.t().add_(x)
    return y * 3


def _earlier_consumer_keeps_its_history(x, m):
    y = x * 1
    z = y * 2  # recorded before y changes
    y.mul_(3)
    return z + y


def _sibling_view_used_after_write(x, m):
    y = x * 1
    a, b = y[0], y[1]
    a.mul_(4)
    return (a + b) * y[0]


CASES = [_write_through_view, _base_changed_after_view, _setitem_on_view,
         _view_of_plain_tensor_takes_grad, _transposed_view, _earlier_consumer_keeps_its_history,
         _sibling_view_used_after_write]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_values_and_gradients_match_torch(fn):
    data = [[1.0, 2.0], [3.0, 4.0]]
    x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    out, ref = fn(x, ember), fn(tx, torch)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_in_place_scaling_of_a_non_leaf_is_fine():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(3)  # mul by a constant does not need the old y
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_forward_mode_follows_in_place_ops():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)

    def f(t):
        y = t * 1
        y.add_(t)
        y[0:1].mul_(3)
        return y

    out, tangent = jvp(f, (x,), (ember.ones_like(x),))
    np.testing.assert_allclose(out.numpy(), [6.0, 4.0])
    np.testing.assert_allclose(tangent.numpy(), [6.0, 2.0])


@pytest.mark.parametrize("fn", [_write_through_view, _setitem_on_view, _transposed_view,
                                _sibling_view_used_after_write],
                         ids=lambda f: f.__name__.strip("_"))
def test_view_scatter_is_differentiable_twice(fn):
    x = ember.tensor([[0.5, -1.0], [2.0, 1.5]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: fn(t, ember), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(t, ember), (x,))


@pytest.mark.parametrize("op", ["clamp_", "div_", "mul_", "pow_", "sin_", "view clamp_"])
def test_in_place_ops_whose_backward_reads_the_old_value_match_torch(op):
    run = {"clamp_": lambda y, v: y.clamp_(-1, 1), "div_": lambda y, v: y.div_(v),
           "mul_": lambda y, v: y.mul_(v), "pow_": lambda y, v: y.pow_(2),
           "sin_": lambda y, v: y.sin_(), "view clamp_": lambda y, v: y[0].clamp_(0, 1)}[op]
    grads = []
    for lib in (ember, torch):
        w = lib.tensor([[-1.5, 0.3, 2.0], [0.7, -0.2, 1.1]], dtype=lib.float64,
                       requires_grad=True)
        v = lib.tensor([0.5, 2.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = w * 1.0
        run(y, v)
        (y * y).sum().backward()
        grads.append((w.grad.numpy(), None if v.grad is None else v.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    assert (grads[0][1] is None) == (grads[1][1] is None)
    if grads[0][1] is not None:
        np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def test_a_view_taken_before_an_in_place_shape_change_writes_through_to_the_gradient():
    import torch

    def run(lib, reshape):
        a = lib.ones(2, 3, requires_grad=True)
        x = a * 1
        v = x[1]
        reshape(x)  # x changes shape in place; v still views its old rows
        v.mul_(a[0] * 3)
        (x * lib.arange(6.0).reshape(x.shape)).sum().backward()
        return a.grad.tolist(), x.detach().tolist()
    for reshape in (lambda x: x.unsqueeze_(0), lambda x: x.t_(),
                    lambda x: x.t_().unsqueeze_(0)):
        assert run(ember, reshape) == run(torch, reshape)


def test_an_in_place_op_on_a_view_written_through_another_view_uses_the_new_history():
    import torch

    def run(lib):
        w = lib.arange(4.0).requires_grad_()
        x = w * 1
        v = x[:3]
        v[::2].mul_(w[:2])  # (written through a view of v: v's own history is stale now)
        v.add_(1)
        (x * x).sum().backward()
        return w.grad.tolist()
    assert run(ember) == run(torch) == [0.0, 16.0, 6.0, 6.0]


def _both(run):
    """``run(lib)`` for Ember and PyTorch, each result as nested lists."""
    import torch

    def plain(x):
        return x.tolist() if hasattr(x, "tolist") else [plain(v) for v in x]
    return plain(run(ember)), plain(run(torch))


def test_a_view_made_a_leaf_stays_one_through_in_place_updates():
    def run(lib):
        w = lib.arange(6.0).reshape(3, 2).t().requires_grad_()  # a view, and a leaf
        opt = (ember if lib is ember else __import__("torch")).optim.SGD([w], lr=0.1)
        for _ in range(2):  # the update writes w in place under no_grad
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        return w.detach()
    got, want = _both(run)
    assert got == want
    w = ember.arange(6.0).reshape(3, 2).t().requires_grad_()
    with pytest.raises(ember.errors.GradError, match="view .* of a leaf tensor"):
        w[1:].mul_(2)


def test_in_place_with_an_operand_that_needs_grad_into_a_tensor_that_does_not():
    for op in ("mul_", "div_", "pow_", "atan2_", "hypot_", "xlogy_", "slice mul_"):
        def run(lib, op=op):
            a = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
            x = lib.tensor([0.5, 1.5, 2.5], dtype=lib.float64)
            if op == "slice mul_":
                x[1:].mul_(a[:2])
            else:
                getattr(x, op)(a)
            (x * x).sum().backward()
            return a.grad
        got, want = _both(run)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=op)


def test_writing_into_views_whose_elements_overlap_is_refused():
    x = ember.arange(5.0)
    with pytest.raises(ember.errors.GradError, match="share memory.*unfold"):
        x.unfold(0, 2, 1).mul_(2)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    x.unfold(0, 2, 2).mul_(2)  # windows that do not overlap: written as PyTorch writes them
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 4.0]
    y = ember.zeros(4, 6)
    y[:, ::2].t().add_(1)  # strided but not overlapping
    assert y.sum().item() == 12.0


def test_a_view_made_under_no_grad_is_not_written_with_grad_enabled():
    w = ember.arange(4.0).requires_grad_()
    x = w * 1
    with ember.no_grad():
        v = x[1:]
        v.mul_(2)  # (under no_grad: fine, as in PyTorch)
    with pytest.raises(ember.errors.GradError, match="made under no_grad"):
        v.mul_(2)
    with pytest.raises(ember.errors.GradError, match="made under no_grad"):
        v[0] = 100.0
    u = ember.arange(4.0)
    with ember.no_grad():
        view = u[1:]
    view.mul_(2)  # its base needs no grad: nothing to lose
    assert u.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_retain_grad_on_a_view_follows_its_base_written_in_place():
    def run(lib):
        w = lib.ones(2, 2, requires_grad=True)
        x = w * 1
        a = x[0]
        a.retain_grad()
        x.mul_(2)
        (a * a).sum().backward()
        return a.grad
    got, want = _both(run)
    assert got == want == [4.0, 4.0]


def test_in_place_on_an_empty_view():
    def run(lib):
        w = lib.arange(4.0).requires_grad_()
        y = w * 1
        y[2:2].mul_(2)
        (y * y).sum().backward()
        return w.grad
    got, want = _both(run)
    assert got == want


def test_data_and_grad_assignments_are_checked():
    w = ember.zeros(2, dtype=ember.float64, requires_grad=True)
    with pytest.raises(TypeError, match="data: expected a tensor, got list"):
        w.data = [1.0, 2.0]
    with pytest.raises(ember.errors.DTypeError, match="cannot hold int64"):
        w.data = ember.tensor([1, 2])
    with pytest.raises(ember.errors.DTypeError, match="float32 gradient .* float64 tensor"):
        w.grad = ember.zeros(2)
    w.grad = ember.ones(2, dtype=ember.float64)
    assert w.grad.tolist() == [1.0, 1.0]
    with pytest.raises(ember.errors.GradError, match="cannot be detached in place"):
        (w * 1)[1:].detach_()
    assert ember.ones(3).broadcast_to(2, 3).shape == (2, 3)
    assert ember.ones(3).broadcast_to((2, -1)).shape == (2, 3)


@pytest.mark.parametrize("change", ["t_", "unsqueeze_", "transpose_"])
def test_an_in_place_shape_change_of_a_saved_tensor_fails_backward_as_torch(change):
    import torch

    args = {"t_": (), "unsqueeze_": (0,), "transpose_": (0, 1)}[change]
    for lib, error in ((ember, ember.errors.GradError), (torch, RuntimeError)):
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        w = lib.tensor([[0.0, 1.0], [2.0, 3.0]], requires_grad=True)
        x = a * 1
        y = (x * w).sum()  # (mul saves x for w's gradient)
        version = x._version
        getattr(x, change)(*args)
        assert x._version == version + 1
        with pytest.raises(error, match="modified by an inplace|modified in place"):
            y.backward()


def test_after_backward_an_in_place_write_into_a_view_leaves_no_cycle():
    # released nodes keep what their inputs were when recorded, not the base's newer history
    # (through this very view's node: a cycle freed only by the gc)
    with gc_off():
        x = ember.randn(4, 4, requires_grad=True)
        y = x * 1
        y[:, 0].mul_(2)
        y.sum().backward()
        refs = weakref.ref(y), weakref.ref(y.grad_fn)
        del y
        assert all(r() is None for r in refs)
    np.testing.assert_allclose(x.grad.numpy()[:, 0], 2.0)


@pytest.mark.parametrize("write", [
    lambda y: y.add_(y.exp()),          # a node that holds y without reading it
    lambda y: y.add_(y * 2),
    lambda y: y[:, 0].mul_(2),          # the view's node holds its base
    lambda y: y.t().add_(1),
])
def test_an_in_place_op_on_a_small_non_leaf_leaves_no_cycle(write):
    # as in PyTorch the graph dies with its last tensor, with no backward and no gc
    with gc_off():
        x = ember.randn(4, 4, requires_grad=True)
        y = x * 1
        write(y)
        refs = weakref.ref(y), weakref.ref(y.grad_fn)
        del y
        assert all(r() is None for r in refs)
    for lib in (ember, torch):  # (and the gradients stay torch's)
        x = lib.tensor(np.arange(16.0).reshape(4, 4) / 10, requires_grad=True)
        y = x * 1.5
        write(y)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        if lib is ember:
            ours = g.detach().numpy(), h.numpy()
    np.testing.assert_allclose(ours[0], g.detach().numpy())
    np.testing.assert_allclose(ours[1], h.numpy())


def test_a_view_written_in_place_without_history_stays_current(monkeypatch):
    # its own write leaves it what replaying its chain would give: no replay on the next use
    # (each use with grad enabled replayed it); writes through its base still make it stale
    import sys

    primitive = sys.modules["ember.ops.primitive"]
    replays = []
    real = primitive.replay_view
    monkeypatch.setattr(primitive, "replay_view", lambda *a: replays.append(1) or real(*a))
    b = ember.zeros(3, 4)
    v = b[1:]
    for _ in range(3):
        v.add_(1)
    v.zero_()  # (the fills and copy_ write straight into memory: the same)
    v.copy_(ember.ones(4))
    v.fill_(2.0)
    v.add_(-1)
    assert replays == [] and b.sum().item() == 8.0 and v._version == b._version == 7
    b.add_(1)  # through the base: v is stale; neither needs grad, so its next write
    v.mul_(2)  # only brings it current (refresh_stale), with no replay
    assert replays == [] and v.tolist() == [[4.0] * 4] * 2 and b[0].tolist() == [1.0] * 4
    w = ember.ones(4, requires_grad=True)  # the base takes a history: the view follows it
    b[1:].mul_(w)
    (v * v).sum().backward()
    assert v.grad_fn is not None and w.grad.tolist() == [64.0] * 4  # (as torch)


@pytest.mark.parametrize("write", [lambda v: v.mul_(2), lambda v: v.fill_(1.0),
                                   lambda v: v.__setitem__(0, 1.0),
                                   lambda v: v.__setitem__(ember.tensor([0]), 1.0)])
def test_write_into_expanded_view_of_graph_tensor_is_a_clear_error(write):
    # torch refuses it ("more than one element of the written-to tensor refers to a single
    # memory location"); Ember raised NumPy's "assignment destination is read-only" from
    # view_scatter instead of its own message
    y = ember.zeros(3, 1, requires_grad=True) * 1
    with pytest.raises(ember.errors.GradError, match="single memory location.*clone"):
        write(y.expand(3, 4))
    with pytest.raises(RuntimeError, match="single memory location"):
        (torch.zeros(3, 1, requires_grad=True) * 1).expand(3, 4).mul_(2)


def _through_views(lib, case):
    x = lib.tensor(np.arange(12.0).reshape(3, 4) / 10, dtype=lib.float64, requires_grad=True)
    y = x * 1.0 + 0.5
    if case == "reshape then transposed":  # (the second write's gradient is laid out
        y.reshape(-1).pow_(2)  # transposed: replaying reshape(-1) on it copied)
        y.t().narrow(-1, 0, 2).pow_(2)
    else:  # a write into one row of an expand (read-only in NumPy)
        y.unsqueeze(0).expand(2, 3, 4)[1].mul_(x)
    g, = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
    g2, = lib.autograd.grad((g ** 2).sum(), x)
    return y.detach().numpy(), g.detach().numpy(), g2.numpy()


@pytest.mark.parametrize("case", ["reshape then transposed", "expand row"])
def test_writes_through_views_differentiate_twice_as_torch(case):
    for e, t in zip(_through_views(ember, case), _through_views(torch, case)):
        np.testing.assert_allclose(e, t, rtol=1e-10)


def test_the_position_fallback_looks_for_overlap_only_where_a_view_repeats(monkeypatch):
    # a gradient written through reshape(-1) then t() takes the positions fallback; no view
    # in that chain repeats an element, so the positions are not sorted for duplicates
    # (np.unique: a sort of an array the size of the base, for each such write)
    calls = []
    unique = np.unique
    monkeypatch.setattr(np, "unique", lambda a, *args, **kw: calls.append(a.size) or
                        unique(a, *args, **kw))
    for e, t in zip(_through_views(ember, "reshape then transposed"),
                    _through_views(torch, "reshape then transposed")):
        np.testing.assert_allclose(e, t, rtol=1e-10)
    assert calls == []
    _through_views(ember, "expand row")  # (a chain with an expand still is checked)
    assert calls


def _through_dtype_views(lib, part):
    a = lib.tensor(np.arange(12.).reshape(3, 4) + 1j * np.arange(12.).reshape(3, 4)[::-1],
                   requires_grad=True)
    c = lib.tensor(np.arange(12.).reshape(4, 3) + 0.5j)
    z = a * 1
    flat = z.reshape(12)
    view = lib.view_as_real(flat)[:, 1] if part == "view_as_real" else getattr(flat, part)
    view.mul_(2)
    (z.t() * c).real.sum().backward()  # (the gradient reaches the write laid out as z.t())
    return a.grad.detach().numpy() if lib is torch else a.grad.numpy()


@pytest.mark.parametrize("part", ["real", "imag", "view_as_real"])
def test_a_gradient_written_through_a_dtype_changing_view_is_torchs(part):
    # the positions fallback maps int64 positions through the chain: np.imag of them is
    # zeros, so such chains are replayed on a contiguous copy of the gradient instead
    np.testing.assert_allclose(_through_dtype_views(ember, part),
                               _through_dtype_views(torch, part), rtol=1e-12)
