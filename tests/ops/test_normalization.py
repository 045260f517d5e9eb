"""Normalisation functions against PyTorch and finite differences."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.ops import normalization
from ember.ops.primitive import apply
from tests.ops.optable import Const, OpCase, S, arg, op_tests

RM = np.array([0.1, -0.2, 0.3])
RV = np.array([1.5, 0.5, 2.0])


def _bn_eval(lib):
    def run(x, w=None, b=None, **kw):
        mean, var = (ember.from_numpy(RM.copy()), ember.from_numpy(RV.copy())) \
            if lib == "ember" else (torch.from_numpy(RM.copy()), torch.from_numpy(RV.copy()))
        if isinstance(x, torch.Tensor) or isinstance(x, ember.Tensor):
            mean, var = mean.to(x.dtype), var.to(x.dtype)
        fn = F.batch_norm if lib == "ember" else TF.batch_norm
        return fn(x, mean, var, w, b, **kw)
    return run


def _bn_train(lib):
    def run(x, w=None, b=None, **kw):
        fn = F.batch_norm if lib == "ember" else TF.batch_norm
        return fn(x, None, None, w, b, training=True, **kw)
    return run


def _bn_sums(lib):
    # batch norm's backward sums, the internal primitive: Σg and Σg·(x - mean) per channel
    def run(g, x, mean):
        if lib == "ember":
            from ember.ops.normalization import BatchNormSums
            from ember.ops.primitive import apply
            return apply(BatchNormSums, g, x, mean)
        dims = (0, *range(2, x.ndim))
        centred = x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))
        return g.sum(dims), (g * centred).sum(dims)
    return run


def _standardize_grad(lib):
    # standardize's backward, the internal primitive: rstd·(g - mean(g) - y·mean(g·y))
    def run(g, y, rstd, dims):
        if lib == "ember":
            from ember.ops.normalization import StandardizeGrad
            from ember.ops.primitive import apply
            return apply(StandardizeGrad, g, y, rstd, dims=dims)
        return rstd * (g - g.mean(dims, keepdim=True) - y * (g * y).mean(dims, keepdim=True))
    return run


def _layer_norm_grad(lib):
    # layer norm's backward, the internal primitive: the input's, weight's and bias's gradients
    def run(g, x, mean, rstd, weight):
        if lib == "ember":
            from ember.ops.layer_norm import LayerNormGrad
            from ember.ops.primitive import apply
            return apply(LayerNormGrad, g, x, mean, rstd, weight)
        dims, lead = tuple(range(-weight.ndim, 0)), tuple(range(x.ndim - weight.ndim))
        xhat, h = (x - mean) * rstd, g * weight
        dx = rstd * (h - h.mean(dims, keepdim=True) - xhat * (h * xhat).mean(dims, keepdim=True))
        return dx, (g * xhat).sum(lead) if lead else g * xhat, g.sum(lead) if lead else g
    return run


def _group_norm_grad(lib):
    # group norm's backward, the internal primitive: the input's, weight's and bias's gradients
    def run(g, x, mean, rstd, weight):
        if lib == "ember":
            from ember.ops.group_norm import GroupNormGrad
            from ember.ops.primitive import apply
            return apply(GroupNormGrad, g, x, mean, rstd, weight)
        n, groups, c = x.shape[0], mean.shape[1], x.shape[1]
        stat, per_channel = (n, groups, 1), (-1,) + (1,) * (x.ndim - 2)
        xhat = (x.reshape(n, groups, -1) - mean.reshape(stat)) * rstd.reshape(stat)
        h = (g * weight.reshape(per_channel)).reshape(n, groups, -1)
        dx = rstd.reshape(stat) * (h - h.mean(2, keepdim=True)
                                   - xhat * (h * xhat).mean(2, keepdim=True))
        gxhat = g.reshape(n, c, -1) * xhat.reshape(n, c, -1)
        return dx.reshape(x.shape), gxhat.sum((0, 2)), g.reshape(n, c, -1).sum((0, 2))
    return run


CASES = [
    OpCase("group_norm_grad", _group_norm_grad("ember"), _group_norm_grad("torch"), [
        S(arg(3, 4, 5), arg(3, 4, 5), arg(3, 2), arg(3, 2, low=0.5, high=2.0), arg(4)),
        S(arg(2, 6, 2, 3, noncontig=True), arg(2, 6, 2, 3), arg(2, 3),
          arg(2, 3, low=0.5, high=2.0), arg(6)),
        S(arg(2, 4), arg(2, 4), arg(2, 4), arg(2, 4, low=0.5, high=2.0), arg(4)),  # (N, C)
    ]),
    OpCase("layer_norm_grad", _layer_norm_grad("ember"), _layer_norm_grad("torch"), [
        S(arg(3, 40), arg(3, 40), arg(3, 1), arg(3, 1, low=0.5, high=2.0), arg(40)),  # numba
        S(arg(2, 3, 4), arg(2, 3, 4), arg(2, 1, 1), arg(2, 1, 1, low=0.5, high=2.0), arg(3, 4)),
        S(arg(2, 3, 4, noncontig=True), arg(2, 3, 4), arg(2, 3, 1),
          arg(2, 3, 1, low=0.5, high=2.0), arg(4)),  # (NumPy's)
        S(arg(5), arg(5), arg(1), arg(1, low=0.5, high=2.0), arg(5)),  # no leading dims
    ]),
    OpCase("standardize_grad", _standardize_grad("ember"), _standardize_grad("torch"), [
        S(arg(3, 40), arg(3, 40), arg(3, 1, low=0.5, high=2.0), dims=(1,)),  # numba's rows
        S(arg(2, 3, 4), arg(2, 3, 4), arg(2, 1, 1, low=0.5, high=2.0), dims=(1, 2)),
        S(arg(2, 3, 4, noncontig=True), arg(2, 3, 4), arg(1, 3, 1, low=0.5, high=2.0),
          dims=(0, 2)),  # (a batch norm's dims: NumPy's)
    ]),
    OpCase("batch_norm_sums", _bn_sums("ember"), _bn_sums("torch"), [
        S(arg(4, 3), arg(4, 3), arg(3)),
        S(arg(2, 3, 3, 3, channels_last=True), arg(2, 3, 3, 3, channels_last=True), arg(3)),
        S(arg(2, 3, 5), arg(2, 3, 5, noncontig=True), arg(3)),
    ]),
    OpCase("layer_norm", F.layer_norm, TF.layer_norm, [
        S(arg(3, 4), Const((4,)), arg(4), arg(4)),
        S(arg(2, 3, 4, noncontig=True), Const((3, 4)), arg(3, 4), arg(3, 4), eps=1e-3),
        S(arg(2, 5), Const((5,))),
        S(arg(0, 4), Const((4,)), arg(4), arg(4)),
        S(arg(6), Const((6,)), arg(6), arg(6)),  # no leading dims
        S(arg(2, 3, 5), Const((5,)), arg(5)),  # weight, no bias
        S(arg(2, 5, 40), Const((40,)), arg(40), arg(40), eps=1e-3),  # numba's rows
    ]),
    OpCase("rms_norm", F.rms_norm, TF.rms_norm, [
        S(arg(3, 4), Const((4,)), arg(4)),
        S(arg(2, 3, 4), Const((3, 4)), eps=1e-3),
    ]),
    OpCase("batch_norm_train", _bn_train("ember"), _bn_train("torch"), [
        S(arg(4, 3), arg(3), arg(3)),
        S(arg(2, 3, 3, 3, noncontig=True), arg(3), arg(3), eps=1e-3),
        S(arg(2, 3, 5)),
    ]),
    OpCase("batch_norm_eval", _bn_eval("ember"), _bn_eval("torch"), [
        S(arg(4, 3), arg(3), arg(3)),
        S(arg(2, 3, 3, 3), arg(3), arg(3)),
    ]),
    OpCase("group_norm", F.group_norm, TF.group_norm, [
        S(arg(2, 6, 3, 3), Const(3), arg(6), arg(6)),
        S(arg(2, 4, 5, noncontig=True), Const(2)),
        S(arg(2, 4), Const(4), arg(4), arg(4), eps=1e-3),
        S(arg(3, 8, 4, 5), Const(2), arg(8), arg(8)),
        S(arg(2, 6, 5), Const(3), arg(6)),  # weight, no bias
        S(arg(2, 6, 2, 2, channels_last=True), Const(1), arg(6), arg(6)),
    ]),
    OpCase("instance_norm", lambda x, *wb: F.instance_norm(x, None, None, *wb),
           lambda x, *wb: TF.instance_norm(x, None, None, *wb), [
               S(arg(2, 3, 3, 3), arg(3), arg(3)),
               S(arg(2, 3, 5)),
           ]),
    OpCase("normalize", F.normalize, TF.normalize, [
        S(arg(3, 4)),
        S(arg(3, 4), p=1, dim=0),
        S(arg(2, 3, 4, noncontig=True), p=3, dim=-1),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4, 4), (2, 3, 0)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_an_empty_batch_is_empty_like_torch(shape, training):
    ours = [ember.zeros(shape, dtype=ember.float64, requires_grad=True),
            ember.full((3,), 1.5, dtype=ember.float64, requires_grad=True),
            ember.full((3,), 0.5, dtype=ember.float64, requires_grad=True)]
    theirs = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in ours]
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out = F.batch_norm(ours[0], rm, rv, *ours[1:], training=training)
    want = TF.batch_norm(theirs[0], trm, trv, *theirs[1:], training=training)
    assert out.shape == tuple(want.shape)
    out.sum().backward()
    want.sum().backward()
    for t, w in zip(ours, theirs):
        np.testing.assert_array_equal(t.grad.numpy(), w.grad.numpy())
    np.testing.assert_array_equal(rm.numpy(), trm.numpy())
    np.testing.assert_array_equal(rv.numpy(), trv.numpy())
    assert ember.autograd.gradcheck(
        lambda *a: F.batch_norm(a[0], None, None, *a[1:], training=True), ours)


def test_batch_norm_module_of_an_empty_batch_is_empty_like_torch():
    for ours, theirs, shape in [(ember.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3), (0, 3)),
                                (ember.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3), (0, 3, 2, 2))]:
        assert ours(ember.randn(*shape)).shape == tuple(theirs(torch.randn(*shape)).shape)
        np.testing.assert_array_equal(ours.running_mean.numpy(), theirs.running_mean.numpy())
        np.testing.assert_array_equal(ours.running_var.numpy(), theirs.running_var.numpy())
        assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item()


@pytest.mark.parametrize("case", [
    ("layer_norm", (2, 0), dict(normalized_shape=(0,))),       # empty normalized dims
    ("layer_norm", (0, 4), dict(normalized_shape=(4,))),
    ("instance_norm", (2, 3, 0, 8), {}),
    ("group_norm", (2, 4, 0, 3), dict(num_groups=2)),
])
def test_norms_of_empty_inputs_are_empty_without_numpy_warnings(case):
    name, shape, kw = case
    x = ember.zeros(shape, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (NumPy's "Mean of empty slice" leaked from here)
        out = getattr(F, name)(x, **kw)
        out.sum().backward()
    want = getattr(TF, name)(torch.zeros(shape), **kw)
    assert out.shape == tuple(want.shape) and x.grad.shape == x.shape


@pytest.mark.parametrize("dims", [(-1,), (1,), (0, -1)])
def test_standardize_of_an_empty_input_has_nan_statistics_of_its_inferred_shape(dims):
    x = ember.zeros(2, 0)
    y, mean, var = apply(normalization.Standardize, x, dims=dims, eps=1e-5)
    stat = tuple(1 if i in {d % 2 for d in dims} else n for i, n in enumerate(x.shape))
    assert y.shape == (2, 0) and mean.shape == var.shape == stat
    assert np.isnan(mean.numpy()).all() and np.isnan(var.numpy()).all()

def test_normalization_errors():
    with pytest.raises(ember.ShapeError, match="normalized_shape"):
        F.layer_norm(ember.randn(2, 3), (4,))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ember.randn(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match="running_mean"):
        F.batch_norm(ember.randn(2, 3), None, None)
    with pytest.raises(ember.ShapeError, match="3 channels"):
        F.batch_norm(ember.randn(2, 3), ember.zeros(4), ember.ones(4))
    with pytest.raises(ember.ShapeError, match="groups"):
        F.group_norm(ember.randn(2, 6, 3), 4)


def test_normalize_zero_vector_has_finite_gradient():
    x = ember.zeros(2, 3, requires_grad=True)
    F.normalize(x, dim=1).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("p", [1.0, 2.0, float("inf"), 3.0])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 300.0])
def test_normalize_half_inputs_match_torch(dtype, p, scale):
    # float16 squares of 300 overflowed a power sum in float16: all zeros (review62 item 1)
    x = np.random.default_rng(9).standard_normal((64, 257)) * scale
    ref = TF.normalize(torch.from_numpy(x).to(getattr(torch, dtype)), p=p, dim=1, eps=1e-4)
    out = ember.empty(64, 257, dtype=getattr(ember, dtype))
    got = F.normalize(ember.from_numpy(x).to(getattr(ember, dtype)), p, 1, 1e-4, out)
    assert got.dtype == out.dtype == getattr(ember, dtype)
    # (a half norm may round one ulp apart from torch's, whose sum runs in another order)
    ulp = float(torch.finfo(ref.dtype).eps)
    np.testing.assert_allclose(got.double().numpy(), ref.double().numpy(), rtol=2 * ulp, atol=0)
    np.testing.assert_array_equal(out.double().numpy(), got.double().numpy())


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, float("inf")])
def test_normalize_gradient_matches_torch_with_a_zero_row(p):
    x = np.random.default_rng(10).standard_normal((3, 5))
    x[0] = 0.0
    mine, ref = ember.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(x).requires_grad_()
    F.normalize(mine, p=p).pow(2).sum().backward()
    TF.normalize(ref, p=p).pow(2).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_standardize_gradients_through_its_mean_and_variance_match_torch():
    from ember.ops.normalization import Standardize
    from ember.ops.primitive import apply

    x = np.random.default_rng(6).standard_normal((3, 4, 5))
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    y, mean, var = apply(Standardize, mine, dims=(0, 2), eps=1e-5)
    var_t, mean_t = torch.var_mean(ref, dim=(0, 2), keepdim=True, correction=0)
    y_t = (ref - mean_t) / torch.sqrt(var_t + 1e-5)
    w = np.random.default_rng(7).standard_normal((3, 4, 5))
    loss = (y * ember.from_numpy(w)).sum() + (mean ** 2).sum() + (var * 3).sum()
    loss_t = (y_t * torch.from_numpy(w)).sum() + (mean_t ** 2).sum() + (var_t * 3).sum()
    (g,) = ember.autograd.grad(loss, [mine], create_graph=True)
    (gt,) = torch.autograd.grad(loss_t, [ref], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-9, atol=1e-12)
    (gg,) = ember.autograd.grad((g * g).sum(), [mine])
    (ggt,) = torch.autograd.grad((gt * gt).sum(), [ref])
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-8, atol=1e-10)
    # forward mode, all three outputs
    d = np.random.default_rng(8).standard_normal((3, 4, 5))
    _, tangents = ember.autograd.forward.jvp(
        lambda t: apply(Standardize, t, dims=(0, 2), eps=1e-5), (ember.from_numpy(x),),
        (ember.from_numpy(d),))

    def f(t):
        v, m = torch.var_mean(t, dim=(0, 2), keepdim=True, correction=0)
        return (t - m) / torch.sqrt(v + 1e-5), m, v

    _, want = torch.func.jvp(f, (torch.from_numpy(x),), (torch.from_numpy(d),))
    for a, b in zip(tangents, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_norms_under_vmap_match_torch():
    x = np.random.default_rng(9).standard_normal((3, 4, 2, 5))
    got = ember.func.vmap(lambda t: F.layer_norm(t, (5,)))(ember.from_numpy(x))
    want = torch.func.vmap(lambda t: TF.layer_norm(t, (5,)))(torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    got = ember.func.vmap(lambda t: F.group_norm(t, 2))(ember.from_numpy(x))
    want = torch.func.vmap(lambda t: TF.group_norm(t, 2))(torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def _bn_primitive(x, w, b):
    from ember.ops.normalization import BatchNorm
    from ember.ops.primitive import apply

    return apply(BatchNorm, x, w, b, eps=1e-5)


def test_batch_norm_primitive_differentiates_through_its_statistics():
    # the fused op's mean and variance outputs (used for running stats) have gradients too
    rng = np.random.default_rng(3)
    x, w, b = (ember.from_numpy(rng.standard_normal(s)).requires_grad_()
               for s in ((3, 2, 4), (2,), (2,)))
    coef = [ember.from_numpy(rng.standard_normal(s)) for s in ((3, 2, 4), (2,), (2,))]

    def f(x, w, b):
        return sum((o * c).sum() for o, c in zip(_bn_primitive(x, w, b), coef))

    assert ember.autograd.gradcheck(f, (x, w, b))
    assert ember.autograd.gradgradcheck(f, (x, w, b))
    out, mean, var = _bn_primitive(x, w, b)
    np.testing.assert_allclose(mean.detach().numpy(), x.detach().numpy().mean((0, 2)))
    np.testing.assert_allclose(var.detach().numpy(), x.detach().numpy().var((0, 2)))


def test_batch_norm_sums_under_vmap_match_each_sample():
    from ember.ops.normalization import BatchNormSums
    from ember.ops.primitive import apply

    rng = np.random.default_rng(8)
    g, x = (ember.from_numpy(rng.standard_normal((5, 4, 3, 6))) for _ in range(2))
    mean = ember.from_numpy(rng.standard_normal((5, 3)))
    total, dot = ember.func.vmap(lambda a, b, m: apply(BatchNormSums, a, b, m))(g, x, mean)
    for i in range(5):
        want = apply(BatchNormSums, g[i], x[i], mean[i])
        np.testing.assert_allclose(total[i].numpy(), want[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(dot[i].numpy(), want[1].numpy(), rtol=1e-12)


def test_batch_norm_keeps_its_input_and_statistics_not_its_output():
    x = ember.randn(4, 3, 5, 5, dtype=ember.float64).requires_grad_()
    w, b = ember.ones(3, dtype=ember.float64), ember.zeros(3, dtype=ember.float64)
    seen = []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y = F.batch_norm(x.clone(), None, None, w.requires_grad_(), b.requires_grad_(),
                         training=True)
    # (the weight, a leaf, goes through the hooks as in torch: 3, 3, 3, then the input)
    assert sorted(tuple(t.shape) for t in seen) == [(3,), (3,), (3,), (4, 3, 5, 5)]
    y.square().sum().backward()
    xt = torch.from_numpy(x.detach().numpy()).requires_grad_()
    TF.batch_norm(xt, None, None, torch.ones(3, dtype=torch.float64),
                  torch.zeros(3, dtype=torch.float64), training=True).square().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_batch_norm_under_vmap_uses_per_sample_statistics_like_torch():
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)

    def run(lib, F_):
        fn = lib.func.vmap(lambda t, w, b: F_.batch_norm(t, None, None, w, b, training=True),
                           in_dims=(0, None, None))
        return fn(*(lib.from_numpy(a) for a in (x, w, b)))

    np.testing.assert_allclose(run(ember, F).numpy(), run(torch, TF).numpy(), rtol=1e-10,
                               atol=1e-12)


def test_batch_norm_refuses_mixed_dtypes_on_every_path():
    # the fused op takes parameters of the input's dtype; other mixes than float32 ones with
    # a half input raise PyTorch's error on every path (fused, composite, evaluation)
    x = ember.randn(4, 3, 2)
    w, b = ember.ones(3, dtype=ember.float64), ember.zeros(3, dtype=ember.float64)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    for call in (lambda: F.batch_norm(x, None, None, w, b, training=True),
                 lambda: F.batch_norm(x, None, None, w, None, training=True),
                 lambda: F.batch_norm(x, rm, rv, w, b)):
        with pytest.raises(RuntimeError, match="mixed dtype"):
            call()


def test_batch_norm_of_a_channels_last_input_sums_by_gemv_and_matches_torch(monkeypatch):
    # a conv's output is channels-last: the statistics and the gradients' per-channel sums
    # are GEMVs with a vector of ones (every size here, by lowering the threshold)
    from ember.backend import gemm

    monkeypatch.setattr(gemm, "_GEMV_SUM_MIN", 1)
    rng = np.random.default_rng(17)
    x = np.moveaxis(rng.standard_normal((3, 4, 5, 2)), -1, 1)  # (3, 2, 4, 5) channels-last
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    mine = [ember.from_numpy(a).requires_grad_() for a in (x, w, b)]

    def f(t, weight, bias):
        return F.batch_norm(t, None, None, weight, bias, training=True).square().sum(
            dim=(0, 2, 3))

    assert ember.autograd.gradcheck(f, mine)
    ref = [torch.from_numpy(np.ascontiguousarray(a)).requires_grad_() for a in (x, w, b)]
    out, want = f(*mine), TF.batch_norm(ref[0], None, None, ref[1], ref[2], training=True)
    want = want.square().sum(dim=(0, 2, 3))
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    want.sum().backward()
    for m, r in zip(mine, ref):
        np.testing.assert_allclose(m.grad.numpy(), r.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dims", [(2,), (-1,), (0, 2)])
def test_standardize_grad_under_vmap_matches_each_sample(dims):
    rng = np.random.default_rng(9)
    g, y = (ember.from_numpy(rng.standard_normal((5, 4, 3, 6))) for _ in range(2))
    rstd = ember.from_numpy(rng.uniform(0.5, 2.0, (5,) + tuple(
        1 if d in {k % 3 for k in dims} else s for d, s in enumerate((4, 3, 6)))))
    grad = _standardize_grad("ember")
    both = ember.func.vmap(lambda a, b, r: grad(a, b, r, dims))(g, y, rstd)
    shared = ember.func.vmap(lambda a: grad(a, y[0], rstd[0], dims))(g)  # one y and rstd
    for i in range(5):
        np.testing.assert_allclose(both[i].numpy(), grad(g[i], y[i], rstd[i], dims).numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(shared[i].numpy(), grad(g[i], y[0], rstd[0], dims).numpy(),
                                   rtol=1e-12)


@pytest.mark.parametrize("shared_weight", [True, False])
def test_layer_norm_under_vmap_matches_each_sample(shared_weight):
    rng = np.random.default_rng(10)
    x = ember.from_numpy(rng.standard_normal((4, 3, 2, 6)))
    w, b = (ember.from_numpy(rng.standard_normal((2, 6) if shared_weight else (4, 2, 6)))
            for _ in range(2))
    axis = None if shared_weight else 0
    out = ember.func.vmap(lambda t, weight, bias: F.layer_norm(t, (2, 6), weight, bias),
                          in_dims=(0, axis, axis))(x, w, b)
    for i in range(4):
        wi, bi = (w, b) if shared_weight else (w[i], b[i])
        np.testing.assert_allclose(out[i].numpy(), F.layer_norm(x[i], (2, 6), wi, bi).numpy(),
                                   rtol=1e-12)


def test_layer_norm_grad_under_vmap_keeps_each_samples_sums():
    from ember.ops.layer_norm import LayerNorm
    from ember.ops.primitive import apply
    rng = np.random.default_rng(11)
    x, g = (ember.from_numpy(rng.standard_normal((4, 3, 2, 6))) for _ in range(2))
    w, b = (ember.from_numpy(rng.standard_normal((2, 6))) for _ in range(2))
    _, mean, rstd = apply(LayerNorm, x, w, b, eps=1e-5)
    grad = _layer_norm_grad("ember")
    per_sample = ember.func.vmap(lambda *a: grad(*a, w))(g, x, mean, rstd)
    for i in range(4):
        for mine, want in zip(per_sample, grad(g[i], x[i], mean[i], rstd[i], w)):
            np.testing.assert_allclose(mine[i].numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def test_layer_norm_primitives_name_bad_shapes_and_dtypes():
    from ember.ops.layer_norm import LayerNorm, LayerNormGrad
    from ember.ops.primitive import apply
    x = ember.randn(2, 3)
    with pytest.raises(ember.ShapeError, match=r"layer_norm: input \(2, 3\) needs weight and "
                                               r"bias of its trailing shape, got \(4,\)"):
        apply(LayerNorm, x, ember.ones(4), ember.zeros(4), eps=1e-5)
    with pytest.raises(ember.DTypeError, match="layer_norm: input float32 and weight/bias "
                                               "float64, float64"):
        apply(LayerNorm, x, *(ember.ones(3, dtype=ember.float64) for _ in range(2)), eps=1e-5)
    # (numba's row loops read what they are given: statistics of other rows must not reach
    # them; the NumPy code fails, and the infer rule says why)
    with pytest.raises(ember.ShapeError, match=r"layer_norm_grad: .* rstd \(3, 1\) do not "
                                               r"match \(statistics: \(2, 1\)\)"):
        apply(LayerNormGrad, x, x, ember.zeros(2, 1), ember.ones(3, 1), ember.ones(3))
    with pytest.raises(ember.ShapeError, match=r"standardize_grad: .* rstd \(3, 1\)"):
        apply(normalization.StandardizeGrad, x, x, ember.ones(3, 1), dims=(-1,))


def test_batch_norm_primitives_refuse_statistics_of_another_width():
    from ember.ops.primitive import apply
    x = ember.randn(8, 4, 4, 3).permute(0, 3, 1, 2)  # channels-last: numba's loops
    with pytest.raises(ember.ShapeError, match=r"batch_norm_sums: .* mean \(5,\)"):
        apply(normalization.BatchNormSums, x, x, ember.zeros(5))
    with pytest.raises(ember.ShapeError, match=r"batch_norm: .* got \(5,\) and \(5,\)"):
        apply(normalization.BatchNorm, x, ember.ones(5), ember.zeros(5), eps=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("weight", [None, "same", "float32", "float64"])
def test_rms_norm_computes_half_inputs_in_float32_as_torch(dtype, weight):
    x = np.random.default_rng(0).standard_normal((3, 5)) * 1e-3  # (below float16's eps²)
    w = np.linspace(0.5, 1.5, 5)
    got, want = (
        lib_f.rms_norm(lib.tensor(x).to(getattr(lib, dtype)), (5,),
                       None if weight is None else
                       lib.tensor(w).to(getattr(lib, dtype if weight == "same" else weight)))
        for lib, lib_f in ((ember, F), (torch, TF)))
    assert got.dtype.name == str(want.dtype)[6:]
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(),
                               rtol=1e-6 if dtype == "float32" else 0)


@pytest.mark.parametrize("shape", [(2, 3, 1), (1, 3, 1, 1)])
def test_instance_norm_refuses_one_element_planes_as_torch(shape):
    """F.instance_norm with use_input_stats (not torch.instance_norm, nor running stats)."""
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        TF.instance_norm(torch.zeros(shape))
    with pytest.raises(ember.errors.ArgumentError, match="more than 1 spatial element"):
        F.instance_norm(ember.zeros(shape))
    rm, rv = ember.zeros(3), ember.ones(3)
    stats = F.instance_norm(ember.ones(shape), rm, rv, use_input_stats=False)
    assert np.allclose(stats.numpy(), 1.0, atol=1e-4)
    aten = ember.instance_norm(ember.ones(shape), None, None, None, None, True, 0.1, 1e-5, False)
    assert not aten.numpy().any()  # (torch.instance_norm takes it: zeros)
