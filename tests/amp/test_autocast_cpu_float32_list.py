"""Under ``autocast("cpu")`` bfloat16/float16 inputs keep their dtype where PyTorch's CPU
autocast does (softmax, exp/log/pow, sum/mean, cumsum, norms, std/var, logsumexp, ...) and go
to float32 where its CPU float32 list says (prod, trace, the losses): Ember's list was CUDA's
(mend58e, from sweep58e's item A). Dtypes and values against torch 2.13."""

import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(0)
A = rng.standard_normal((4, 5)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
P = np.abs(A) + 0.5
Q = rng.random((4, 5)).astype(np.float32) * 0.8 + 0.1  # (in (0, 1))
X = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
S = (rng.standard_normal((4, 4)) + 4 * np.eye(4)).astype(np.float32)


def F(L):
    return L.nn.functional


def T(L, a, low):
    return L.tensor(a).to(getattr(L, low))


def lab(L):
    return L.tensor([0, 1, 2, 3])


OPS = {
    "softmax": lambda L, l: L.softmax(T(L, A, l), 0),
    "log_softmax": lambda L, l: L.log_softmax(T(L, A, l), 0),
    "exp": lambda L, l: L.exp(T(L, A, l)),
    "exp2": lambda L, l: L.exp2(T(L, A, l)),
    "expm1": lambda L, l: L.expm1(T(L, A, l)),
    "log": lambda L, l: L.log(T(L, P, l)),
    "log1p": lambda L, l: L.log1p(T(L, P, l)),
    "log2": lambda L, l: L.log2(T(L, P, l)),
    "log10": lambda L, l: L.log10(T(L, P, l)),
    "pow_scalar": lambda L, l: L.pow(T(L, P, l), 2.5),
    "pow": lambda L, l: L.pow(T(L, P, l), T(L, A, l)),
    "rpow": lambda L, l: 2.0 ** T(L, A, l),
    "reciprocal": lambda L, l: L.reciprocal(T(L, P, l)),
    "rsqrt": lambda L, l: L.rsqrt(T(L, P, l)),
    "acos": lambda L, l: L.acos(T(L, Q, l)),
    "asin": lambda L, l: L.asin(T(L, Q, l)),
    "cosh": lambda L, l: L.cosh(T(L, A, l)),
    "sinh": lambda L, l: L.sinh(T(L, A, l)),
    "tan": lambda L, l: L.tan(T(L, A, l)),
    "softplus": lambda L, l: F(L).softplus(T(L, A, l)),
    "erf": lambda L, l: L.erf(T(L, A, l)),
    "sum": lambda L, l: L.sum(T(L, A, l)),
    "mean": lambda L, l: L.mean(T(L, A, l)),
    "prod": lambda L, l: L.prod(T(L, A, l)),
    "cumsum": lambda L, l: L.cumsum(T(L, A, l), 0),
    "cumprod": lambda L, l: L.cumprod(T(L, A, l), 0),
    "nan_to_num": lambda L, l: L.nan_to_num(T(L, A, l)),
    "std": lambda L, l: L.std(T(L, A, l)),
    "var": lambda L, l: L.var(T(L, A, l)),
    "logsumexp": lambda L, l: L.logsumexp(T(L, A, l), 0),
    "norm": lambda L, l: L.norm(T(L, A, l)),
    "vector_norm": lambda L, l: L.linalg.vector_norm(T(L, A, l)),
    "layer_norm": lambda L, l: F(L).layer_norm(T(L, A, l), (5,)),
    "group_norm": lambda L, l: F(L).group_norm(T(L, X, l), 3),
    "batch_norm": lambda L, l: F(L).batch_norm(T(L, X, l), None, None, training=True),
    "instance_norm": lambda L, l: F(L).instance_norm(T(L, X, l)),
    "normalize": lambda L, l: F(L).normalize(T(L, A, l)),
    "cosine_similarity": lambda L, l: F(L).cosine_similarity(T(L, A, l), T(L, B, l)),
    "dist": lambda L, l: L.dist(T(L, A, l), T(L, B, l)),
    "trace": lambda L, l: L.trace(T(L, S, l)),
    "mse_loss": lambda L, l: F(L).mse_loss(T(L, A, l), T(L, B, l)),
    "l1_loss": lambda L, l: F(L).l1_loss(T(L, A, l), T(L, B, l)),
    "smooth_l1": lambda L, l: F(L).smooth_l1_loss(T(L, A, l), T(L, B, l)),
    "huber": lambda L, l: F(L).huber_loss(T(L, A, l), T(L, B, l)),
    "cross_entropy": lambda L, l: F(L).cross_entropy(T(L, A, l), lab(L)),
    "nll_loss": lambda L, l: F(L).nll_loss(T(L, A, l), lab(L)),
    "kl_div": lambda L, l: F(L).kl_div(T(L, A, l), T(L, Q, l), reduction="batchmean"),
    "bce": lambda L, l: F(L).binary_cross_entropy(T(L, Q, l), T(L, Q, l)),
    "bce_logits": lambda L, l: F(L).binary_cross_entropy_with_logits(T(L, A, l), T(L, Q, l)),
    "margin_ranking":
        lambda L, l: F(L).margin_ranking_loss(T(L, A, l), T(L, B, l), T(L, np.sign(A), l)),
    "soft_margin": lambda L, l: F(L).soft_margin_loss(T(L, A, l), T(L, np.sign(B), l)),
    "hinge_embedding": lambda L, l: F(L).hinge_embedding_loss(T(L, A, l), T(L, np.sign(B), l)),
    "cosine_embedding":
        lambda L, l: F(L).cosine_embedding_loss(T(L, A, l), T(L, B, l), L.tensor([1, -1, 1, -1])),
    "triplet_margin": lambda L, l: F(L).triplet_margin_loss(T(L, A, l), T(L, B, l), T(L, P, l)),
    "poisson_nll": lambda L, l: F(L).poisson_nll_loss(T(L, A, l), T(L, P, l)),
    "gaussian_nll": lambda L, l: F(L).gaussian_nll_loss(T(L, A, l), T(L, B, l), T(L, P, l)),
    "multi_margin": lambda L, l: F(L).multi_margin_loss(T(L, A, l), lab(L)),
    "multilabel_margin":
        lambda L, l: F(L).multilabel_margin_loss(T(L, A, l), L.tensor([[0, 1, -1, 0, 0]] * 4)),
    "multilabel_soft_margin":
        lambda L, l: F(L).multilabel_soft_margin_loss(T(L, A, l), T(L, (Q > 0.5) * 1.0, l)),
    "cumulative_trapezoid": lambda L, l: L.cumulative_trapezoid(T(L, A, l)),
    "trapezoid": lambda L, l: L.trapezoid(T(L, A, l)),
    "logcumsumexp": lambda L, l: L.logcumsumexp(T(L, A, l), 0),
    "softmin": lambda L, l: F(L).softmin(T(L, A, l), 0),
    "log_sigmoid": lambda L, l: F(L).logsigmoid(T(L, A, l)),
    "sigmoid": lambda L, l: L.sigmoid(T(L, A, l)),
    "tanh": lambda L, l: L.tanh(T(L, A, l)),
    "sqrt": lambda L, l: L.sqrt(T(L, P, l)),
    "square": lambda L, l: L.square(T(L, A, l)),
    "amax": lambda L, l: L.amax(T(L, A, l)),
    "matmul": lambda L, l: T(L, A, l) @ T(L, B, l).T,
}


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_cpu_autocast_keeps_low_inputs_as_torch(name, low):
    out = []
    for lib in (torch, ember):
        with lib.autocast("cpu", dtype=getattr(lib, low)):
            out.append(OPS[name](lib, low))
    theirs, ours = out
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), (ours.dtype, theirs)
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2,
                               atol=2e-2)
