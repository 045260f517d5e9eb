"""Loss modules against torch.nn losses; nn.init distributions; nn.utils against torch."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.tensor import add_wrap_hook, remove_wrap_hook

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3))
Y = rng.standard_normal((4, 3))
P = 1 / (1 + np.exp(-X))
T01 = (rng.random((4, 3)) > 0.5).astype(np.float64)
CLS = np.array([0, 2, 1, 2])
W3 = np.array([0.2, 1.0, 3.0])

LOSSES = [
    ("MSELoss", {}, [X, Y]), ("MSELoss", {"reduction": "sum"}, [X, Y]),
    ("L1Loss", {"reduction": "none"}, [X, Y]), ("SmoothL1Loss", {"beta": 0.5}, [X, Y]),
    ("HuberLoss", {"delta": 0.7}, [X, Y]),
    ("CrossEntropyLoss", {}, [X, CLS]),
    ("CrossEntropyLoss", {"weight": W3, "label_smoothing": 0.1}, [X, CLS]),
    ("CrossEntropyLoss", {"ignore_index": 2}, [X, CLS]),
    ("CrossEntropyLoss", {}, [X, P / P.sum(1, keepdims=True)]),
    ("NLLLoss", {"weight": W3}, [np.log(P), CLS]),
    ("BCELoss", {}, [P, T01]), ("BCELoss", {"weight": np.ones(3) * 0.5}, [P, T01]),
    ("BCEWithLogitsLoss", {"pos_weight": W3}, [X, T01]),
    ("KLDivLoss", {"reduction": "batchmean"}, [np.log(P), P[::-1].copy()]),
    ("KLDivLoss", {"log_target": True}, [np.log(P), np.log(P[::-1].copy())]),
    ("CosineEmbeddingLoss", {"margin": 0.1}, [X, Y, np.array([1, -1, 1, -1])]),
    ("MSELoss", {"size_average": False}, [X, Y]),
]


@pytest.mark.parametrize("name,kwargs,inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(name, kwargs, inputs):
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    ekw = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    t, e = getattr(torch.nn, name)(**tkw), getattr(nn, name)(**ekw)
    assert e.reduction == t.reduction
    assert list(e.state_dict()) == list(t.state_dict())
    tx = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    ex = [ember.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    lt, le = t(*tx), e(*ex)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    lt.sum().backward()
    le.sum().backward()
    for a, b in zip(ex, tx):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_loss_bad_reduction():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


def _moments(fn, shape=(200, 300), **kw):
    w = ember.empty(*shape)
    out = fn(w, **kw)
    assert out is w
    return w.numpy()


def test_init_distributions():
    ember.manual_seed(0)  # statistical checks: fixed draws, so the test cannot flake
    torch.manual_seed(0)
    fan_in, fan_out = 300, 200
    w = _moments(nn.init.uniform_, a=-2, b=3)
    assert w.min() >= -2 and w.max() < 3 and abs(w.mean() - 0.5) < 0.02
    w = _moments(nn.init.normal_, mean=1.0, std=2.0)
    assert abs(w.mean() - 1) < 0.02 and abs(w.std() - 2) < 0.02
    w = _moments(nn.init.xavier_uniform_, gain=2.0)
    b = 2 * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(w).max() <= b and abs(w.std() - b / math.sqrt(3)) < 0.02 * b
    w = _moments(nn.init.xavier_normal_)
    assert abs(w.std() - math.sqrt(2 / (fan_in + fan_out))) < 0.002
    w = _moments(nn.init.kaiming_uniform_, a=0, mode="fan_out", nonlinearity="relu")
    b = math.sqrt(2) * math.sqrt(3 / fan_out)
    assert np.abs(w).max() <= b and np.abs(w).max() > 0.99 * b
    w = _moments(nn.init.kaiming_normal_, mode="fan_in", nonlinearity="relu")
    assert abs(w.std() - math.sqrt(2 / fan_in)) < 0.002
    w = _moments(nn.init.trunc_normal_, mean=0.5, std=1.0, a=-1.0, b=1.5)
    assert w.min() >= -1.0 and w.max() <= 1.5
    t = torch.nn.init.trunc_normal_(torch.empty(200, 300), mean=0.5, std=1.0, a=-1.0, b=1.5)
    assert abs(w.mean() - t.mean().item()) < 0.02 and abs(w.std() - t.std().item()) < 0.02
    assert (_moments(nn.init.constant_, val=3.5) == 3.5).all()
    assert (_moments(nn.init.ones_) == 1).all() and (_moments(nn.init.zeros_) == 0).all()
    conv = ember.empty(16, 8, 3, 3)
    fi, fo = nn.init._calculate_fan_in_and_fan_out(conv)
    assert (fi, fo) == (72, 144)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3)])
def test_orthogonal(shape):
    w = nn.init.orthogonal_(ember.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4 * np.eye(min(rows, cols)), atol=1e-5)


def test_calculate_gain_matches_torch():
    for name, param in [("linear", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
                        ("conv2d", None)]:
        assert nn.init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("swish")


def test_init_generator_reproducible_and_no_grad():
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    p = nn.Parameter(ember.empty(4, 4))
    a = nn.init.kaiming_uniform_(p, generator=g1).detach().numpy().copy()
    b = nn.init.kaiming_uniform_(ember.empty(4, 4), generator=g2).numpy()
    np.testing.assert_array_equal(a, b)
    assert p.is_leaf and p.requires_grad
    with pytest.raises(ValueError, match="fewer than 2"):
        nn.init.xavier_uniform_(ember.empty(3))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_matches_torch(norm_type):
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(())]
    ep = [nn.Parameter(ember.zeros(*g.shape, dtype=ember.float64)) for g in grads]
    tp = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for e, t, g in zip(ep, tp, grads):
        e.grad, t.grad = ember.tensor(g), torch.tensor(g)
    total_e = nn.utils.clip_grad_norm_(ep, 0.5, norm_type=norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(tp, 0.5, norm_type=norm_type)
    assert total_e.item() == pytest.approx(total_t.item(), rel=1e-10)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_clip_grad_norm_fast_path_equals_the_ops_bit_for_bit(dtype):
    # plain CPU gradients skip the per-tensor ops (norm, mul_); the same bits as the ops give
    shapes = [(3, 4), (0,), (), (50, 7), (4, 5)]
    grads = [np.asarray(rng.standard_normal(s) * 7.0) for s in shapes]
    grads[3] = np.asfortranarray(grads[3])
    ps = [nn.Parameter(ember.zeros(*g.shape, dtype=dtype)) for g in grads]
    for p, g in zip(ps, grads):
        p.grad = ember.tensor(g, dtype=dtype)
    expected_total = ember.stack([p.grad.reshape(-1).norm(2) for p in ps]).norm(2)
    coef = (1.0 / (expected_total + 1e-6)).clamp(max=1.0)
    expected = [(p.grad * coef).numpy() for p in ps]
    versions = [p.grad._version for p in ps]
    made = []
    add_wrap_hook(made.append)  # (each tensor made: an op's output, a wrap)
    try:
        total = nn.utils.clip_grad_norm_(ps, 1.0)
    finally:
        remove_wrap_hook(made.append)
    assert all(t.ndim == 0 for t in made)  # (the fast path: no op on a gradient, scalars only)
    assert total.dtype == dtype and total.shape == () and not total.requires_grad
    np.testing.assert_array_equal(total.numpy(), expected_total.numpy())
    for p, e, v in zip(ps, expected, versions):
        np.testing.assert_array_equal(p.grad.numpy(), e)
        assert p.grad._version == v + 1


def test_clip_grad_nonfinite_value_and_vectors():
    p = nn.Parameter(ember.zeros(2))
    p.grad = ember.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = ember.tensor([-3.0, 0.2])
    nn.utils.clip_grad_value_(p, 0.5)
    assert p.grad.tolist() == [-0.5, pytest.approx(0.2)]
    m = nn.Linear(2, 3)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (9,)
    nn.utils.vector_to_parameters(ember.arange(9.0), m.parameters())
    assert m.weight.tolist()[0] == [0.0, 1.0] and m.bias.tolist() == [6.0, 7.0, 8.0]
    with pytest.raises(ValueError, match="9"):
        nn.utils.vector_to_parameters(ember.arange(5.0), m.parameters())


def test_orthogonal_refuses_an_integer_tensor():
    """It was filled with the orthogonal matrix truncated to integers (mostly 0); torch
    refuses (its normal_ has no integer kernel)."""
    with pytest.raises(TypeError, match=r"orthogonal_: expected a floating tensor, got int64"):
        nn.init.orthogonal_(ember.empty(3, 4, dtype=ember.int64))
    with pytest.raises(NotImplementedError):
        torch.nn.init.orthogonal_(torch.empty(3, 4, dtype=torch.int64))
