"""saved_tensors_hooks: pack when recorded, unpack in backward, same gradients; and against
torch for what a compressing hook does to the gradient."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.saved_hooks import SAVED_HOOKS, saved_tensors_hooks


def _model(x, w):
    h = (x * 2).exp()
    return (h @ w).tanh().sum()


def test_pack_and_unpack_called_results_equal():
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 5, requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.to(ember.float64)

    def unpack(t):
        unpacked.append(tuple(t.shape))
        return t.to(ember.float32)

    with saved_tensors_hooks(pack, unpack):
        loss = _model(x, w)
    assert packed and not unpacked
    assert (3, 4) in packed and (3, 5) in packed  # exp's output, matmul's input, tanh's out
    loss.backward()
    assert sorted(packed) == sorted(unpacked)
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    _model(x, w).backward()
    np.testing.assert_array_equal(gx.numpy(), x.grad.numpy())
    np.testing.assert_array_equal(gw.numpy(), w.grad.numpy())
    assert SAVED_HOOKS.top is None


def test_offload_to_numpy_frees_and_restores():
    x = ember.randn(6, requires_grad=True)
    store = {}

    def pack(t):
        store[len(store)] = t.detach().numpy().copy()
        return len(store) - 1

    with saved_tensors_hooks(pack, lambda k: ember.tensor(store.pop(k))):
        y = (x.sin() * x.cos()).sum()
    assert store
    y.backward()
    assert not store
    np.testing.assert_allclose(x.grad.numpy(), np.cos(2 * x.detach().numpy()), rtol=1e-5,
                               atol=1e-6)  # (float32: an entry near 0 depends on the seed)


def test_unpacked_value_is_used_like_torch():
    """A hook that changes the value changes the gradient, as in PyTorch (here: doubling)."""
    xv = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    cv = np.arange(5, dtype=np.float32)
    x = ember.tensor(xv, requires_grad=True)
    with saved_tensors_hooks(lambda t: t * 2, lambda t: t):
        (x.exp() + x * ember.tensor(cv)).sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
        (xt.exp() + xt * torch.tensor(cv)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_nested_hooks_innermost_wins_and_create_graph():
    x = ember.randn(4, requires_grad=True, dtype=ember.float64)
    outer, inner = [], []
    with saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            y = (x.sin() ** 3).sum()
        assert inner and not outer
        (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert outer  # the backward ops, recorded under create_graph, were saved through it
    (gg,) = ember.autograd.grad(g.sum(), x)
    (g0,) = ember.autograd.grad((x.sin() ** 3).sum(), x, create_graph=True)
    (gg0,) = ember.autograd.grad(g0.sum(), x)
    np.testing.assert_allclose(gg.numpy(), gg0.numpy())


def test_retain_graph_and_in_place_detection():
    x = ember.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        h = x * 1.0
        y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy(), rtol=1e-6)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        h = x * 1.0
        y = (h * h).sum()
    h.add_(1)
    with pytest.raises(ember.GradError, match="modified in place"):
        y.backward()


def test_unpack_must_return_tensor():
    x = ember.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x.exp().sum()
    with pytest.raises(ember.GradError, match="unpack_hook must return a tensor"):
        y.backward()


def _leaf_saved(lib):
    log = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    hooks = lib.autograd.graph.saved_tensors_hooks(
        lambda t: (log.append(tuple(t.shape)), t * 10)[1], lambda t: t)
    with hooks:
        y = (x * x).sum()
    y.backward()
    x2 = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        g, = lib.autograd.grad((x2 * x2 * x2).sum(), x2, create_graph=True)
    g.sum().backward()
    x3 = lib.tensor([1.0, 2.0], requires_grad=True)
    with hooks:
        y = _Square[lib].apply(x3).sum()
    g3, = lib.autograd.grad(y, x3, create_graph=True)
    g3.sum().backward()
    return log, x.grad.tolist(), g.tolist(), x2.grad.tolist(), g3.tolist(), x3.grad.tolist()


def _square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g * ctx.saved_tensors[0]
    return Square


_Square = {lib: _square(lib) for lib in (ember, torch)}


def test_a_leaf_that_requires_grad_goes_through_the_hooks_as_torch():
    # (its packed value is what backward reads; a second order still reaches the leaf)
    assert _leaf_saved(ember) == _leaf_saved(torch)


_PACKED_CASES = {  # (an operand whose gradient nobody needs leaves the other unread)
    "x @ W, x needs no grad": lambda lib, x, w, b: x @ w.t(),
    "x @ W.t() (a linear)": lambda lib, x, w, b: lib.nn.functional.linear(x, w, b),
    "addmm": lambda lib, x, w, b: lib.addmm(b, x, w.t()),
    "bmm": lambda lib, x, w, b: lib.bmm(x[None], w.t()[None]),
    "conv with a bias": lambda lib, x, w, b: lib.nn.functional.conv1d(x.t()[None], w[..., None], b),
}


def _packed(lib, case, x_grad):
    x = lib.arange(6.0, dtype=lib.float64).reshape(2, 3).requires_grad_(x_grad)
    w = lib.arange(12.0, dtype=lib.float64).reshape(4, 3).requires_grad_()
    b = lib.ones(4, dtype=lib.float64, requires_grad=True)
    seen = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(tuple(t.shape)) or t,
                                                lambda t: t):
        y = _PACKED_CASES[case](lib, x, w, b)
    (y * y).sum().backward()
    grads = [t.grad.tolist() for t in (x, w, b) if t.grad is not None]
    return sorted(seen), grads, w.grad.numpy().flags.c_contiguous


@pytest.mark.parametrize("x_grad", [False, True])
@pytest.mark.parametrize("case", list(_PACKED_CASES))
def test_the_saved_operands_an_op_packs_are_torchs(case, x_grad):
    # a weight under an input that needs no gradient is not kept: save_on_cpu copies no weight
    assert _packed(ember, case, x_grad) == _packed(torch, case, x_grad)


def test_a_linear_weights_gradient_keeps_its_layout_when_the_weight_is_not_kept():
    x = ember.randn(8, 300)
    layer = ember.nn.Linear(300, 200)
    layer(x).sum().backward()
    assert layer.weight.grad.numpy().flags.c_contiguous
    want = ember.ones(8, 200).t() @ x
    assert ember.allclose(layer.weight.grad, want, atol=1e-4)


def _conv_packs_and_write(lib, nd, x_grad, w_grad, b_grad):
    x = lib.ones(1, 2, *[4] * nd, dtype=lib.float64, requires_grad=x_grad)
    w = lib.ones(3, 2, *[2] * nd, dtype=lib.float64, requires_grad=w_grad)
    b = lib.ones(3, dtype=lib.float64, requires_grad=b_grad)
    conv = getattr(lib.nn.functional, f"conv{nd}d")
    seen = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(tuple(t.shape)) or t,
                                                lambda t: t):
        y = conv(x * 1, w, b)
    y = conv(x * 1 if x_grad else x, w, b)
    with lib.no_grad():
        x.add_(1) if not x_grad else None
    try:
        y.sum().backward()
        refused = False
    except RuntimeError as err:
        refused = "modified" in str(err)
    return sorted(seen), refused


@pytest.mark.parametrize("grads", [(1, 0, 0), (1, 0, 1), (0, 0, 1), (0, 1, 0), (1, 1, 1)])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_a_convolution_keeps_its_input_and_weight_as_torch_whatever_is_trained(nd, grads):
    # a frozen weight's input is kept too (packed; a later write to it refused), never the bias
    got = _conv_packs_and_write(ember, nd, *map(bool, grads))
    assert got == _conv_packs_and_write(torch, nd, *map(bool, grads))


@pytest.mark.parametrize("what", ["input", "output", "function"])
def test_a_value_the_pack_hook_made_anew_is_not_version_checked_as_torch(what):
    # (torch checks no value its hooks keep; one packed as is stays checked in Ember, above)
    def run(lib):
        class Sin(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a.sin()

            @staticmethod
            def backward(ctx, g):
                return g * ctx.saved_tensors[0].cos()

        x = lib.tensor([0.5, 1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = x * 1
            z = {"input": y.sin, "output": y.exp, "function": lambda: Sin.apply(y)}[what]()
        (z if what == "output" else y).add_(1)
        z.sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-6)


def _keyed(keep):
    """A pack hook that stores ``keep(t)`` in a store of its own and returns the key."""
    store = []
    return lambda t: store.append(keep(t)) or len(store) - 1, lambda k: store[k]


_KEPT = {
    "save_on_cpu": lambda: ember.autograd.graph.save_on_cpu(),
    "tuple": lambda: ember.autograd.graph.saved_tensors_hooks(lambda t: (t,), lambda p: p[0]),
    "dict": lambda: ember.autograd.graph.saved_tensors_hooks(lambda t: {"v": t[1:]},
                                                             lambda p: ember.cat([p["v"][:1],
                                                                                  p["v"]])),
    "key": lambda: ember.autograd.graph.saved_tensors_hooks(*_keyed(lambda t: t)),
    "numpy": lambda: ember.autograd.graph.saved_tensors_hooks(lambda t: t.numpy(),
                                                              ember.from_numpy),
}
_MADE_ANEW = {
    "clone": lambda: ember.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t),
    "cast": lambda: ember.autograd.graph.saved_tensors_hooks(lambda t: t.double(),
                                                             lambda t: t.float()),
    "key of a clone": lambda: ember.autograd.graph.saved_tensors_hooks(
        *_keyed(lambda t: t.clone())),
    "numpy copy": lambda: ember.autograd.graph.saved_tensors_hooks(
        lambda t: (t.numpy().copy(),), lambda p: ember.from_numpy(p[0])),
}


def _write_after_saving(hooks, what):
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with hooks():
        b = a * 1
        c = b * b if what == "input" else b.exp()
    b.add_(1) if what == "input" else c.add_(1)
    c.sum().backward()
    return a.grad.tolist()


@pytest.mark.parametrize("what", ["input", "output"])
@pytest.mark.parametrize("name", sorted(_KEPT))
def test_a_value_the_pack_hook_kept_inside_a_container_or_store_is_still_checked(name, what):
    # the hook keeps the tensor itself (in a tuple, a dict, a store behind a key, as a NumPy
    # view): a write after saving is refused (PyTorch silently reads the written values)
    with pytest.raises(ember.GradError, match="modified"):
        _write_after_saving(_KEPT[name], what)


@pytest.mark.parametrize("name", sorted(_MADE_ANEW))
def test_a_copy_the_pack_hook_made_is_not_checked_whatever_holds_it(name):
    np.testing.assert_allclose(_write_after_saving(_MADE_ANEW[name], "input"), [2, 4, 6])
    np.testing.assert_allclose(_write_after_saving(_MADE_ANEW[name], "output"),
                               np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def _leaves_a_cycle(t):
    def helper(x):
        try:
            raise ValueError
        except ValueError as e:
            err = e  # noqa: F841 (frame -> err -> traceback -> frame: x lives until gc)
        return x.clone()
    return helper(t)


def _keeps_for_itself(name, seen):
    """Pack hooks that keep ``t`` for their own reasons but return a copy."""
    return {"debug list": lambda t: seen.append(t) or t.clone(),
            "list of detach()": lambda t: seen.append(t.detach()) or t.clone(),
            "tracker dict": lambda t: seen.append({id(t): (t.shape, t)}) or t.clone(),
            "helper with a gc cycle": _leaves_a_cycle}[name]


@pytest.mark.parametrize("custom", [False, True])
@pytest.mark.parametrize("name", ["debug list", "list of detach()", "tracker dict",
                                  "helper with a gc cycle"])
def test_a_hook_keeping_t_for_itself_while_returning_a_copy_is_not_checked(name, custom):
    # backward reads the copy, so a write to t after forward changes nothing: torch's answer
    def run(lib):
        seen = []
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(_keeps_for_itself(name, seen), lambda v: v):
            b = a * 1
            c = (_square(lib).apply(b) if custom else b * b).sum()
        with lib.no_grad():
            b.add_(1)
        c.backward()
        return a.grad.tolist()

    assert run(ember) == run(torch) == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("hooks", ["clone", "save_on_cpu(pin_memory=True)"])
def test_batch_norm_under_a_copying_hook_allows_a_write_to_its_input_as_torch(hooks):
    def run(lib):
        a = lib.tensor([[1.0, 2.0], [3.0, 5.0], [0.0, 7.0]], dtype=lib.float64,
                       requires_grad=True)
        bn = lib.nn.BatchNorm1d(2).double()
        graph = lib.autograd.graph
        ctx = graph.save_on_cpu(pin_memory=True) if hooks != "clone" else \
            graph.saved_tensors_hooks(lambda t: t.clone(), lambda v: v)
        with ctx:
            h = a * 1
            y = (bn(h) * lib.arange(6.0, dtype=lib.float64).reshape(3, 2)).sum()
        with lib.no_grad():
            h.add_(1)
        y.backward()
        return a.grad.detach().numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-10)


@pytest.mark.parametrize("store", ["views behind a key", "dedup by id"])
def test_a_store_that_hands_back_the_saved_memory_is_checked(store):
    # backward reads the written memory (PyTorch silently gives [4, 6, 8])
    kept = {}

    def pack(t):
        key = id(t) if store == "dedup by id" else len(kept)
        kept.setdefault(key, t if store == "dedup by id" else t.view(-1))
        return key

    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, kept.__getitem__):
        b = (a.reshape(3, 1) * 1).t()[0]  # (a saved tensor whose array is a view)
        c = (b * b).sum()
    with ember.no_grad():
        b.add_(1)
    with pytest.raises(ember.GradError, match="modified"):
        c.backward()
