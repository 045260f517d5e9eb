"""ember.cond: eager semantics and errors against torch.cond, gradients, ember.jit (forward,
compiled training steps, generated code), vmap."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.errors import OpError
from ember.func import grad, jvp

X = np.array([[0.3, -1.2, 2.0], [1.5, 0.2, -0.7]])
W = np.array([0.5, -0.25, 2.0])


def _true(a, b, w):
    return (a * w).sin() + b, a.sum(0)


def _false(a, b, w):
    return a.exp() * 2 - b, (a * a).sum(0)


def test_eager_values_and_gradients_match_torch():
    # (torch.cond compiles its branches with dynamo, seconds per call site: one test, both
    # predicates, the same branch functions)
    for taken in (True, False):
        x, b = ember.tensor(X, requires_grad=True), ember.tensor(W, requires_grad=True)
        w = ember.tensor(W, requires_grad=True)
        y, s = ember.cond(ember.tensor(taken), _true, _false, (x, b, w))
        (y.sum() + (s * s).sum()).backward()
        xt, bt = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)
        wt = torch.tensor(W, requires_grad=True)
        yt, st = torch.cond(torch.tensor(taken), _true, _false, (xt, bt, wt))
        (yt.sum() + (st * st).sum()).backward()
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(s.detach().numpy(), st.detach().numpy(), rtol=1e-12)
        for e, t in ((x, xt), (b, bt), (w, wt)):  # (a branch not taken: zeros, as torch)
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_captured_tensors_get_gradients():
    x, w = ember.tensor(X[0], requires_grad=True), ember.tensor(W, requires_grad=True)
    ember.cond(ember.tensor(True), lambda a: a * w, lambda a: a + 1, (x,)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), X[0], rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), W, rtol=1e-12)


def test_python_bool_runs_the_branch_and_structures_pass_through():
    x = ember.tensor([1.0, 2.0])
    out = ember.cond(False, lambda d: {"y": d["x"] + 1}, lambda d: {"y": d["x"] - 1},
                     [{"x": x}])
    assert out["y"].tolist() == [0.0, 1.0]
    out = ember.cond(ember.tensor([1.0]), lambda d: {"y": d["x"] * 3},
                     lambda d: {"y": d["x"] - 1}, [{"x": x}])
    assert out["y"].tolist() == [3.0, 6.0]


@pytest.mark.parametrize("pred, true_fn, false_fn, operands, message", [
    (ember.tensor([True, False]), lambda x: x + 1, lambda x: x, "ops", "single-element"),
    ("a", lambda x: x + 1, lambda x: x, "ops", "bool or a tensor"),
    (ember.tensor(True), lambda x: x + 1, 3, "ops", "callable"),
    (ember.tensor(True), lambda x: x + 1, lambda x: x - 1, "tensor", "operands"),
    (ember.tensor(True), lambda x: x.sin(), lambda x: x.sum(), "ops",
     r"f64\[2\], of false_fn f64\[\]"),
    (ember.tensor(True), lambda x: x.sin(), lambda x: x.float(), "ops", "same shapes and dtypes"),
    (ember.tensor(True), lambda x: (x + 1, x * 2), lambda x: x - 1, "ops", "structures"),
    (ember.tensor(True), lambda x: x, lambda x: x + 1, "ops", "aliases"),
    (ember.tensor(True), lambda x: x[0], lambda x: x[1] + 1, "ops", "aliases"),
    (ember.tensor(True), lambda x: 1.0, lambda x: x + 1, "ops", "must return tensors"),
])
def test_errors_where_torch_raises(pred, true_fn, false_fn, operands, message):
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    operands = (x,) if operands == "ops" else x
    with pytest.raises(OpError, match=message):
        ember.cond(pred, true_fn, false_fn, operands)


@pytest.mark.parametrize("taken", [True, False])
def test_gradcheck_and_gradgradcheck(taken):
    x = ember.tensor(X[0], requires_grad=True)
    w = ember.tensor(W, requires_grad=True)

    def f(x, w):
        return ember.cond(ember.tensor(taken), lambda a: (a * w).sin() * a,
                          lambda a: (a * a).exp(), (x,))

    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_forward_mode():
    x, t = ember.tensor(X[0]), ember.tensor(W)
    for taken, want in ((True, np.cos(X[0]) * W), (False, 2 * X[0] * W)):
        pred = ember.tensor(taken)
        _, tangent = jvp(lambda a, p=pred: ember.cond(p, lambda u: u.sin(), lambda u: u * u,
                                                      (a,)), (x,), (t,))
        np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-12)


def _branchy(x, w):
    h = x * w
    return ember.cond(h.sum() > 0, lambda a: (a * 2).relu() + w, lambda a: a.tanh() - 1, (h,))


def test_jit_forward_takes_either_branch_with_one_graph():
    fast = ember.jit.compile(_branchy)
    w = ember.tensor(W)
    for x in (ember.tensor(X), ember.tensor(-X), ember.tensor(X)):
        np.testing.assert_allclose(fast(x, w).numpy(), _branchy(x, w).numpy(), rtol=1e-12)
    assert len(ember.jit.explain()) and fast.graph is not None
    assert sum(e.prim.name == "cond" for e in fast.graph.eqns) == 1


def test_jit_training_step_matches_eager_over_steps():
    def make():  # (each branch has its own layer: the cond captures both)
        ember.manual_seed(3)
        first, second = ember.nn.Linear(3, 3).double(), ember.nn.Linear(3, 3).double()
        opt = ember.optim.Adam([*first.parameters(), *second.parameters()], lr=0.05)

        def step(x):
            y = ember.cond(x.mean() > 0, lambda a: first(a).tanh() * second.bias,
                           lambda a: second(a) * 2, (x,))
            loss = (y ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, [*first.parameters(), *second.parameters()]

    (eager, eager_params), (fast, fast_params) = make(), make()
    fast = ember.jit.compile(fast)
    rng = np.random.default_rng(0)
    for sign in (1, -1, 1, -1, -1):
        x = ember.tensor(rng.standard_normal((4, 3)) + sign)
        np.testing.assert_allclose(fast(x).item(), eager(x).item(), rtol=1e-10)
    for p, q in zip(eager_params, fast_params):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-10)
    assert "backward of cond" in str(fast.graph)


def test_compiled_call_is_differentiable():
    w = ember.tensor(W, requires_grad=True)
    fast = ember.jit.compile(_branchy)
    for x in (X, -X):
        fast(ember.tensor(x), w).sum().backward()
        got, w.grad = w.grad.numpy(), None
        _branchy(ember.tensor(x), w).sum().backward()
        np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-12)
        w.grad = None


def test_graph_and_code_are_readable():
    fast = ember.jit.compile(_branchy)
    fast(ember.tensor(X), ember.tensor(W))
    text = str(fast.graph)
    assert "= cond(" in text and "graph true_fn(" in text and "graph false_fn(" in text
    code = fast.code
    lines = code.splitlines()
    branch = next(i for i, line in enumerate(lines) if line.strip().startswith("if "))
    assert "test_cond.py" in lines[branch] and "ember.cond(" in lines[branch]
    assert lines[branch + 2].strip() == "else:"
    assert "def cond_true(" in code and "def cond_false(" in code
    assert "tanh(xp" in code[code.index("def cond_false("):]


def test_data_dependent_if_error_names_cond():
    def f(x):
        return x * 2 if x.sum() > 0 else x
    with pytest.raises(ember.jit.TraceError, match=r"ember\.cond\("):
        ember.jit.compile(f)(ember.tensor(X))


def test_save_refuses_graphs_with_cond(tmp_path):
    fast = ember.jit.compile(_branchy)
    with ember.no_grad():
        fast(ember.tensor(X), ember.tensor(W))
    with pytest.raises(ValueError, match="control flow"):
        ember.jit.save(fast, tmp_path / "f.ejit")


def _per_sample(x, s):
    return ember.cond(s > 0, lambda a: a.sin() * s, lambda a: a.cos(), (x,))


def test_vmap_batched_predicate_selects_per_sample():
    x, s = ember.tensor(X), ember.tensor([1.0, -2.0])
    want = ember.stack([_per_sample(x[i], s[i]) for i in range(2)])
    np.testing.assert_allclose(ember.vmap(_per_sample)(x, s).numpy(), want.numpy(), rtol=1e-12)
    g = ember.vmap(grad(lambda a, s: _per_sample(a, s).sum()))(x, s)
    np.testing.assert_allclose(g.numpy(), np.stack([np.cos(X[0]), -np.sin(X[1])]), rtol=1e-12)


def test_vmap_shared_predicate_keeps_the_cond():
    s = ember.tensor(-1.0)
    calls = []

    def f(x):
        return ember.cond(s > 0, lambda a: a.sin(), lambda a: (calls.append(1), a.cos())[1], (x,))

    np.testing.assert_allclose(ember.vmap(f)(ember.tensor(X)).numpy(), np.cos(X), rtol=1e-12)
    fast = ember.jit.compile(ember.vmap(f))
    np.testing.assert_allclose(fast(ember.tensor(X)).numpy(), np.cos(X), rtol=1e-12)
    assert any(e.prim.name == "cond" for e in fast.graph.eqns)


def test_python_branch_inside_a_branch_names_the_branch():
    with pytest.raises(ember.jit.TraceError, match="cond: true_fn reads the values"):
        ember.cond(ember.tensor(True), lambda a: a * 2 if a.sum() > 0 else a + 1,
                   lambda a: a - 1, (ember.tensor(X),))


def test_nested_cond_compiles_and_differentiates():
    def f(x, s):
        def outer(a):
            return ember.cond(s < 1, lambda b: b.sin(), lambda b: b.exp(), (a * 2,))
        return ember.cond(s > 0, outer, lambda a: -a, (x,))

    fast = ember.jit.compile(f)
    for s in (0.5, 2.0, -1.0):
        x, ss = ember.tensor(X[0], requires_grad=True), ember.tensor(s)
        fast(x, ss).sum().backward()
        got, x.grad = x.grad.numpy(), None
        f(x, ss).sum().backward()
        np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-12)
    assert fast.code.count("def cond_true") >= 2


def test_random_branch_draws_as_the_branch_taken_alone():
    def noisy(a):
        return a + ember.randn(3, dtype=ember.float64)

    def f(x, s):
        return ember.cond(s > 0, noisy, lambda a: a * 2, (x,))

    x, fast = ember.tensor(X[0]), ember.jit.compile(f)
    for run in (f, fast, fast):
        ember.manual_seed(7)
        got = run(x, ember.tensor(1.0))
        ember.manual_seed(7)
        np.testing.assert_allclose(got.numpy(), noisy(x).numpy(), rtol=1e-12)
    assert not next(e for e in fast.graph.eqns if e.prim.name == "cond").prim.pure


def test_writing_a_captured_tensor_in_a_branch_raises():
    w = ember.tensor(W)
    with pytest.raises(OpError, match="writes in place into a tensor it captures"):
        ember.cond(ember.tensor(True), lambda a: a + w.add_(1), lambda a: a * 2,
                   (ember.tensor(X[0]),))


def test_a_refused_write_in_a_branch_changes_nothing():
    bn = ember.nn.BatchNorm1d(3)  # training mode: its forward updates the running stats
    x = ember.tensor(X)
    with pytest.raises(OpError, match="writes in place into a tensor it captures"):
        ember.cond(ember.tensor(False), bn, lambda a: a * 2, (x,))
    assert bn.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(bn.running_mean.numpy(), np.zeros(3))


@pytest.mark.parametrize("write", [lambda a: a.add_(1), lambda a: a.detach().mul_(2) + 0,
                                   lambda a: a[0].zero_() + 0])
def test_writing_an_operand_in_a_branch_raises_as_in_torch(write):
    x = ember.tensor(X[0])
    with pytest.raises(OpError, match="writes in place into its operand"):
        ember.cond(ember.tensor(True), write, lambda a: a * 2, (x,))
    np.testing.assert_array_equal(x.numpy(), X[0])


class _Counting(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", ember.zeros(()))

    def forward(self, x):
        self.calls = self.calls + 1  # (a buffer rebound: torch.cond refuses this side effect)
        return x * 2


def test_rebinding_a_buffer_in_a_branch_raises_and_keeps_it():
    counting = _Counting()
    before = counting.calls
    with pytest.raises(OpError, match="rebinds calls, state of a module it calls"):
        ember.cond(ember.tensor(False), counting, lambda a: a + 1, (ember.tensor(X[0]),))
    assert counting.calls is before and before.item() == 0


def test_vmap_with_only_the_predicate_batched_gives_each_sample_its_branch():
    w, s = ember.tensor(W), ember.tensor([1.0, -1.0])  # (torch.vmap gives the same)
    got = ember.vmap(lambda s: ember.cond(s > 0, lambda a: a * 2, lambda a: a - 1, (w,)))(s)
    np.testing.assert_allclose(got.numpy(), np.stack([W * 2, W - 1]), rtol=1e-12)


def test_a_branch_constant_returned_by_compiled_code_is_a_new_tensor():
    fast = ember.jit.compile(lambda x, p: ember.cond(p, lambda a: ember.ones(2) * 5,
                                                     lambda a: a * 2, (x,)))
    x, p = ember.tensor([1.0, 2.0]), ember.tensor(True)
    for _ in range(3):  # (the first call traces; the later ones run the generated code)
        out = fast(x, p)
        assert out.tolist() == [5.0, 5.0]
        out.add_(100)  # must not change what the next call returns


def test_backward_computes_only_the_gradients_needed():
    layer = ember.nn.Linear(3, 3).double()
    x = ember.tensor(X)  # (no gradient wanted for the data)
    y = ember.cond(x.mean() > 0, layer, lambda a: a * 2, (x,))
    assert y.grad_fn.needs_input_grad[:2] == (False, False)
    fast = ember.jit.compile(lambda x: ember.cond(x.mean() > 0, layer, lambda a: a * 2,
                                                  (x,)).sum().backward())
    fast(x)
    backward = next(e for e in fast.graph.eqns if e.prim.name == "cond" and
                    e.source.what.startswith("backward"))
    assert len(backward.outputs) == 2  # the weight's and the bias's: not the data's


def test_autocast_applies_inside_the_branches_as_in_torch():
    layer = ember.nn.Linear(3, 3)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = ember.cond(ember.tensor(True), layer, lambda a: layer(a) * 2,
                       (ember.tensor(X, dtype=ember.float32),))
    assert y.dtype is ember.bfloat16  # (torch.cond under torch.autocast: bfloat16 too)


def test_gradient_of_a_random_branch_uses_the_numbers_drawn_forward():
    dropout = ember.nn.Dropout(0.5)
    x = ember.ones(16, requires_grad=True)
    ember.manual_seed(1)
    y = ember.cond(ember.tensor(True), dropout, lambda a: a * 2, (x,))
    after = ember.rand(3)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())  # (kept: 2, else 0)
    ember.manual_seed(1)
    ember.cond(ember.tensor(True), dropout, lambda a: a * 2, (x,))
    np.testing.assert_array_equal(ember.rand(3).numpy(), after.numpy())  # (backward drew none)


def test_compiled_gradient_of_a_random_branch_raises_clearly():
    dropout = ember.nn.Dropout(0.5)
    step = ember.jit.compile(lambda x: ember.cond(x.sum() > 0, dropout, lambda a: a * 2,
                                                  (x,)).sum().backward())
    with pytest.raises(ember.errors.GradError, match="draws random numbers"):
        step(ember.ones(4, requires_grad=True))
