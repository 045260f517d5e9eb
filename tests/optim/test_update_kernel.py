"""The optimizers' one-pass numba updates (Adam, AdamW, SGD, RMSprop, Adagrad, Adadelta, Adamax,
NAdam, RAdam) against NumPy's
passes: the same bits after several steps, in both dtypes, with every option that reaches
them, over parameters of several sizes, and the cases left to NumPy."""

import numpy as np
import pytest

import ember
from ember.backend import compiled
from ember.optim import elementwise


def _trajectory(numba, make, dtype, layout="c", steps=4, **options):
    """Several steps of parameters of three sizes: their values and their states, in one
    array each."""
    saved = compiled.numba_enabled()
    compiled.use_numba(numba)
    try:
        rng = np.random.default_rng(0)
        params = []
        for shape in [(64, 48), (7, 3), (33, 5)]:
            data = rng.standard_normal(shape).astype(dtype)
            w = ember.from_numpy(data.T.copy().T if layout == "fortran" else data)
            params.append(w.requires_grad_())
        opt = make(params, lr=1e-2, **options)
        for _ in range(steps):
            for w in params:
                w.grad = ember.from_numpy(rng.standard_normal(w.shape).astype(dtype))
            opt.step()
        states = [s.numpy().ravel() for w in params for s in opt.state[w].values()]
        return np.concatenate([w.detach().numpy().ravel() for w in params]), states
    finally:
        compiled.use_numba(saved)


@pytest.fixture
def looped(monkeypatch):
    """Whether each update numba's loop could take was taken by it."""
    served = []
    loopable = elementwise._loopable

    def spy(*args):
        served.append(loopable(*args))
        return served[-1]
    monkeypatch.setattr(elementwise, "_loopable", spy)
    return served


CASES = [(ember.optim.Adam, {}), (ember.optim.AdamW, {"weight_decay": 0.1, "maximize": True}),
         (ember.optim.Adam, {"betas": (0.5, 0.9), "eps": 1e-3, "weight_decay": 0.1}),
         (ember.optim.SGD, {"momentum": 0.9}),
         (ember.optim.SGD, {"momentum": 0.8, "nesterov": True, "weight_decay": 0.1}),
         (ember.optim.SGD, {"momentum": 0.5, "dampening": 0.3, "maximize": True}),
         (ember.optim.Adam, {"amsgrad": True}),
         (ember.optim.AdamW, {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
         (ember.optim.SGD, {}), (ember.optim.SGD, {"weight_decay": 0.1, "maximize": True}),
         (ember.optim.RMSprop, {}),
         (ember.optim.RMSprop, {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
         (ember.optim.RMSprop, {"momentum": 0.5, "maximize": True}),
         (ember.optim.RMSprop, {"centered": True, "alpha": 0.5}),
         (ember.optim.Adagrad, {"lr_decay": 0.1, "weight_decay": 0.1, "maximize": True}),
         (ember.optim.Adagrad, {"initial_accumulator_value": 0.5, "eps": 1e-3}),
         (ember.optim.Adadelta, {}), (ember.optim.Adadelta, {"rho": 0.5, "weight_decay": 0.1}),
         (ember.optim.Adamax, {}),
         (ember.optim.Adamax, {"betas": (0.5, 0.9), "weight_decay": 0.1, "maximize": True}),
         (ember.optim.NAdam, {}), (ember.optim.RAdam, {}),
         # (rectified from the 6th step on with beta2 = 0.9: both of RAdam's branches)
         (ember.optim.RAdam, {"betas": (0.5, 0.9), "weight_decay": 0.1, "maximize": True,
                              "steps": 12}),
         (ember.optim.RAdam, {"betas": (0.8, 0.9), "decoupled_weight_decay": True,
                              "weight_decay": 0.1, "steps": 12}),
         (ember.optim.NAdam, {"decoupled_weight_decay": True, "weight_decay": 0.1,
                              "momentum_decay": 0.1, "maximize": True})]


@pytest.mark.parametrize("make,options", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_loop_equals_numpys_update_bit_for_bit(looped, make, options, dtype, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(ember.optim.SGD, "looped_min_size", lambda self, group: 0)
    mine, state = _trajectory(True, make, dtype, **options)
    assert looped and all(looped)
    theirs, their_state = _trajectory(False, make, dtype, **options)
    assert mine.dtype == dtype
    np.testing.assert_array_equal(mine, theirs)
    for a, b in zip(state, their_state):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make,case", [(ember.optim.Adam, {"layout": "fortran"}),
                                       (ember.optim.RMSprop, {"layout": "fortran"}),
                                       (ember.optim.SGD, {}),  # (small: NumPy's is cheaper)
                                       (ember.optim.SGD, {"momentum": 0.9, "layout": "fortran"})])
def test_other_updates_are_left_to_numpy(looped, make, case):
    pytest.importorskip("numba")
    layout = case.pop("layout", "c")
    mine, _ = _trajectory(True, make, np.float32, layout, **case)
    theirs, _ = _trajectory(False, make, np.float32, layout, **case)
    assert not any(looped)
    np.testing.assert_array_equal(mine, theirs)


def test_a_subclass_with_its_own_update_is_not_looped(looped):
    pytest.importorskip("numba")
    steps = []

    class Logged(ember.optim.SGD):
        def update(self, p, g, state, group):
            steps.append(p)
            super().update(p, g, state, group)
    mine, _ = _trajectory(True, Logged, np.float32, momentum=0.9)
    theirs, _ = _trajectory(False, ember.optim.SGD, np.float32, momentum=0.9)
    assert len(steps) == 3 * 4 and not looped
    np.testing.assert_array_equal(mine, theirs)


def test_a_gradient_sharing_the_parameters_memory_is_decayed_with_it():
    # PyTorch's AdamW shrinks the parameter in place before reading the gradient, so a
    # gradient that is the parameter's own memory (p.grad = p.detach()) is shrunk too
    torch = pytest.importorskip("torch")
    pytest.importorskip("numba")
    start = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    results = []
    for numba in (True, False):
        saved = compiled.numba_enabled()
        compiled.use_numba(numba)
        try:
            w = ember.from_numpy(start.copy()).requires_grad_()
            opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5, eps=10.0)
            for _ in range(3):
                w.grad = w.detach()
                opt.step()
            results.append(w.detach().numpy().copy())
        finally:
            compiled.use_numba(saved)
    t = torch.tensor(start, requires_grad=True)
    opt = torch.optim.AdamW([t], lr=0.1, weight_decay=0.5, eps=10.0)
    for _ in range(3):
        t.grad = t.detach()
        opt.step()
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_an_update_set_on_the_instance_steps_every_parameter(looped):
    pytest.importorskip("numba")
    steps = []

    def logged(make):
        def make_logged(params, **options):
            opt = make(params, **options)
            update = opt.update
            opt.update = lambda p, g, state, group: (steps.append(p), update(p, g, state, group))
            return opt
        return make_logged
    mine, _ = _trajectory(True, logged(ember.optim.Adam), np.float32)
    theirs, _ = _trajectory(False, ember.optim.Adam, np.float32)
    assert len(steps) == 3 * 4 and not looped
    np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("make,options", [(ember.optim.Adamax, {}),
                                          (ember.optim.AdamW, {"amsgrad": True}),
                                          (ember.optim.RMSprop, {"centered": True}),
                                          (ember.optim.Adagrad, {}), (ember.optim.NAdam, {})])
def test_nonfinite_gradients_give_numpys_values(make, options):
    # NaN wins numba's maximum as NumPy's (Adamax's infinity norm, amsgrad's v_max)
    pytest.importorskip("numba")
    grads = [np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32),
             np.array([1.0, -2.0, np.nan, -0.0, np.inf, 3.0], np.float32)]
    results = []
    for numba in (True, False):
        saved = compiled.numba_enabled()
        compiled.use_numba(numba)
        try:
            w = ember.from_numpy(np.linspace(-1, 1, 6, dtype=np.float32)).requires_grad_()
            opt = make([w], lr=0.1, **options)
            for g in grads:
                w.grad = ember.from_numpy(g.copy())
                opt.step()
            results.append([w.detach().numpy().copy()]
                           + [s.numpy().copy() for s in opt.state[w].values()])
        finally:
            compiled.use_numba(saved)
    for mine, theirs in zip(*results):
        np.testing.assert_array_equal(mine, theirs)


def test_sgd_without_momentum_keeps_no_state():
    pytest.importorskip("numba")
    w = ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.5, weight_decay=0.1)
    for _ in range(2):
        w.grad = ember.ones(3)
        opt.step()
    assert len(opt.state) == 0 and w.tolist() == pytest.approx([0.0 + 1 - 0.55 - 0.5225] * 3)
