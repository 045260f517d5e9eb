"""Differences a torch-differential sweep of the losses found (fuzz losses63), each compared
with PyTorch 2.13."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import DTypeError, IndexOutOfRange, ShapeError

RNG = np.random.default_rng(63)
LP = np.log(RNG.dirichlet(np.ones(5), size=(6, 3)))  # (T, N, C) log-probabilities


@pytest.mark.parametrize("pad", [-1, 0, 9])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_ctc_loss_ignores_the_padding_past_each_target_length_as_torch(pad, reduction):
    targets = np.array([[1, 2, 2], [3, pad, pad], [4, 4, pad]])
    lengths = (np.array([6, 5, 4]), np.array([3, 1, 2]))
    xt = torch.tensor(LP, requires_grad=True)
    ref = torch.nn.functional.ctc_loss(xt, torch.tensor(targets), *map(torch.tensor, lengths),
                                       reduction=reduction)
    ref.sum().backward()
    xe = ember.tensor(LP, requires_grad=True)
    mine = F.ctc_loss(xe, ember.tensor(targets), *map(ember.tensor, lengths),
                      reduction=reduction)
    mine.sum().backward()
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_ctc_loss_still_refuses_an_out_of_range_label_within_a_length():
    with pytest.raises(IndexOutOfRange, match=r"ctc_loss: targets must be class indices"):
        F.ctc_loss(ember.tensor(LP), ember.tensor([[1, 7, 0], [3, 0, 0], [4, 4, 0]]),
                   ember.tensor([6, 5, 4]), ember.tensor([3, 1, 2]))


def _both(name, args, kwargs, dtypes):
    """(Ember's result, PyTorch's result) of ``F.name`` on ``args``/``kwargs`` (NumPy arrays
    in the given dtypes, in order), the input requiring grad and backward run."""
    arrays = list(args) + list(kwargs.values())
    out = []
    for lib in (ember, torch):
        made = [lib.tensor(a, dtype=getattr(lib, d)) for a, d in zip(arrays, dtypes)]
        made[0].requires_grad_(True)
        pos, kw = made[:len(args)], dict(zip(kwargs, made[len(args):]))
        fn = getattr(F if lib is ember else torch.nn.functional, name)
        loss = fn(*pos, **kw)
        loss.backward()
        out.append((loss, made[0].grad))
    return out


X = RNG.standard_normal((3, 4))
Y = RNG.integers(0, 2, (3, 4)).astype(float)
W = RNG.random(4)


@pytest.mark.parametrize("dtypes", [("float32", "float32", "float64"),
                                    ("float64", "float32", "float32"),
                                    ("float64", "float32", "float64"),
                                    ("float16", "float16", "float32"),
                                    ("float32", "float64", "float32")])
@pytest.mark.parametrize("kind", ["pos_weight", "weight"])
def test_bce_with_logits_result_has_the_targets_dtype_as_torch(dtypes, kind):
    (mine, g), (ref, rg) = _both("binary_cross_entropy_with_logits", (X, Y), {kind: W}, dtypes)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    assert g.dtype.name == str(rg.dtype).removeprefix("torch.")
    tol = 1e-3 if "float16" in dtypes[:2] else 1e-6
    np.testing.assert_allclose(float(mine.item()), ref.item(), rtol=tol)
    np.testing.assert_allclose(g.numpy().astype(float), rg.numpy().astype(float), rtol=tol,
                               atol=tol * 0.1)


@pytest.mark.parametrize("dtypes", [("float32", "float32", "float64"),
                                    ("float16", "float16", "float32")])
def test_binary_cross_entropy_weight_keeps_the_inputs_dtype_as_torch(dtypes):
    p = 1 / (1 + np.exp(-X))
    (mine, _), (ref, _) = _both("binary_cross_entropy", (p, Y), {"weight": W}, dtypes)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(float(mine.item()), ref.item(), rtol=1e-3)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "multi_margin_loss"])
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float64", "float32"),
                                    ("float16", "float32"), ("float32", "int64")])
def test_class_weights_of_another_dtype_keep_the_inputs_dtype(name, dtypes):
    # PyTorch refuses them ("expected scalar type Float but found Double"); Ember casts the
    # weights, so the loss is what PyTorch gives for weights cast by hand
    target = np.array([0, 3, 1])
    weight = np.array([1.0, 2.0, 0.5, 3.0])
    mine = getattr(F, name)(ember.tensor(X, dtype=getattr(ember, dtypes[0])),
                            ember.tensor(target),
                            weight=ember.tensor(weight.astype(dtypes[1])))
    assert mine.dtype.name == dtypes[0]
    x = torch.tensor(X, dtype=getattr(torch, dtypes[0]))
    fn = getattr(torch.nn.functional, name)
    ref = fn(x.float() if x.dtype == torch.float16 else x, torch.tensor(target),
             weight=torch.tensor(weight.astype(dtypes[1])).to(
                 torch.float32 if x.dtype == torch.float16 else x.dtype))
    np.testing.assert_allclose(float(mine.item()), ref.item(), rtol=1e-3)


def test_probability_target_cross_entropy_still_promotes_its_weight_as_torch():
    p = np.exp(X) / np.exp(X).sum(1, keepdims=True)
    (mine, _), (ref, _) = _both("cross_entropy", (X, p), {"weight": W},
                                ("float32", "float32", "float64"))
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.") == "float64"
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_kl_div_refuses_an_integral_target_as_torch(dtype):
    with pytest.raises(RuntimeError, match="Integral inputs not supported"):
        torch.nn.functional.kl_div(torch.tensor(X), torch.ones(3, 4, dtype=getattr(torch, dtype)),
                                   reduction="sum")
    with pytest.raises(DTypeError, match=r"kl_div: Integral inputs not supported"):
        F.kl_div(ember.tensor(X), ember.ones(3, 4, dtype=getattr(ember, dtype)),
                 reduction="sum")


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_an_integer_input_promotes_to_a_floating_target_as_torch(name, reduction):
    ints, floats = np.array([[1, 2], [3, 4]]), np.array([[0.5, 1.0], [2.0, 3.5]])
    mine = getattr(F, name)(ember.tensor(ints), ember.tensor(floats, dtype=ember.float32),
                            reduction=reduction)
    ref = getattr(torch.nn.functional, name)(torch.tensor(ints),
                                             torch.tensor(floats, dtype=torch.float32),
                                             reduction=reduction)
    assert mine.dtype == ember.float32
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(DTypeError, match=f"{name}: expected a floating input, got int64"):
        getattr(F, name)(ember.tensor(ints), ember.tensor(ints))


def test_smooth_l1_loss_of_beta_0_warns_of_broadcasting_once_as_torch():
    with pytest.warns(UserWarning) as caught:
        F.smooth_l1_loss(ember.zeros(3, 1), ember.ones(3), beta=0.0)
    assert len(caught) == 1 and "broadcast to (3, 3)" in str(caught[0].message)


def test_gaussian_nll_loss_of_an_infinite_var_is_inf_as_torch():
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    var = np.array([[np.inf, 1e-9, 0.5], [2.0, 0.0, np.inf]])
    vt = torch.tensor(var, requires_grad=True)
    ref = torch.nn.functional.gaussian_nll_loss(torch.tensor(x), torch.tensor(y), vt,
                                                reduction="none")
    ref[:, 1:].sum().backward()
    ve = ember.tensor(var, requires_grad=True)
    mine = F.gaussian_nll_loss(ember.tensor(x), ember.tensor(y), ve, reduction="none")
    mine[:, 1:].sum().backward()
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ve.grad.numpy(), vt.grad.numpy(), rtol=1e-12)


def test_multilabel_margin_loss_of_infinite_logits_as_torch():
    x = np.array([[np.inf, 1.0, 0.0], [-np.inf, 0.0, 1.0], [0.5, -1.0, 2.0]])
    target = np.array([[0, -1, 0], [1, 0, -1], [2, 0, -1]])
    xt = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(target), reduction="none")
    ref[[0, 2]].sum().backward()
    xe = ember.tensor(x, requires_grad=True)
    mine = F.multilabel_margin_loss(xe, ember.tensor(target), reduction="none")
    mine[ember.tensor([0, 2])].sum().backward()
    np.testing.assert_array_equal(mine.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("name", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
def test_binary_losses_refuse_a_weight_that_broadcasts_past_the_input_as_torch(name):
    p, y, w = 1 / (1 + np.exp(-X)), Y, RNG.random((2, 3, 4))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        getattr(torch.nn.functional, name)(torch.tensor(p), torch.tensor(Y),
                                           weight=torch.tensor(w))
    with pytest.raises(ShapeError, match=rf"{name}: weight of shape \(2, 3, 4\) must broadcast "
                                         r"to the input's shape \(3, 4\)"):
        getattr(F, name)(ember.tensor(p), ember.tensor(y), weight=ember.tensor(w))
    # one that broadcasts to it is taken, as in PyTorch
    mine = getattr(F, name)(ember.tensor(p), ember.tensor(y), weight=ember.tensor(W[None]))
    ref = getattr(torch.nn.functional, name)(torch.tensor(p), torch.tensor(Y),
                                             weight=torch.tensor(W[None]))
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-12)


@pytest.mark.parametrize("target", [np.array([0, 1, 2], dtype=np.uint8), np.full((3, 4), 0.25)])
def test_cross_entropy_names_a_weight_of_the_wrong_class_count(target):
    with pytest.raises(ShapeError, match=r"cross_entropy: weight has shape \(5,\) but there "
                                         r"are 4 classes"):
        F.cross_entropy(ember.tensor(X), ember.tensor(target), weight=ember.ones(5))


@pytest.mark.parametrize("target_dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("log_input", [True, False])
def test_poisson_nll_loss_of_an_integer_input_promotes_as_torch(target_dtype, log_input):
    counts, target = np.array([1, 2, 3]), np.array([0.5, 1.0, 2.0])
    mine = F.poisson_nll_loss(ember.tensor(counts),
                              ember.tensor(target, dtype=getattr(ember, target_dtype)),
                              log_input=log_input, full=True)
    ref = torch.nn.functional.poisson_nll_loss(
        torch.tensor(counts), torch.tensor(target, dtype=getattr(torch, target_dtype)),
        log_input=log_input, full=True)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-6)


@pytest.mark.parametrize("var", [0.5, np.full(3, 0.5)])
def test_gaussian_nll_loss_of_an_integer_input_promotes_as_torch(var):
    mean, target = np.array([1, 2, 3]), np.array([0.5, 1.0, 2.0], dtype=np.float32)
    mine = F.gaussian_nll_loss(ember.tensor(mean), ember.tensor(target),
                               ember.tensor(var) if isinstance(var, np.ndarray) else var)
    ref = torch.nn.functional.gaussian_nll_loss(
        torch.tensor(mean), torch.tensor(target),
        torch.tensor(var) if isinstance(var, np.ndarray) else var)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda p, t: F.kl_div(p, p),  # reduction 'mean' (and the ones under autocast's decorator)
    lambda p, t: F.mse_loss(p[:, :1], p[:, 0]),
    lambda p, t: F.cross_entropy(p, t, size_average=False),
    lambda p, t: F.binary_cross_entropy_with_logits(p, p, reduction="elementwise_mean"),
    lambda p, t: F.multi_margin_loss(p, t, reduce=False),
    lambda p, t: ember.nn.KLDivLoss()(p, p),
    lambda p, t: ember.nn.L1Loss(size_average=True),
])
def test_loss_warnings_name_the_users_line(call):
    with pytest.warns(UserWarning) as caught:
        call(ember.rand(3, 4), ember.tensor([0, 1, 2]))
    assert [w.filename for w in caught] == [__file__] * len(caught)


@pytest.mark.parametrize("target_dtype", ["bfloat16", "float16"])
def test_bce_with_logits_keeps_float32_logits_gradient_beside_a_half_target(target_dtype):
    # the terms in float32 then rounded to the target's dtype: the input gradient as torch's
    # (computed in the half dtype it was 1e-2 off)
    x = np.random.default_rng(0).standard_normal(200).astype(np.float32) * 3
    t = (np.arange(200) % 2).astype(np.float32)
    grads = []
    for lib, fn in ((torch, torch.nn.functional), (ember, F)):
        xs = lib.tensor(x, requires_grad=True)
        fn.binary_cross_entropy_with_logits(
            xs, lib.tensor(t).to(getattr(lib, target_dtype)), reduction="sum").backward()
        grads.append(xs.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name, x, target", [
    ("multilabel_margin_loss", [[np.inf, np.inf, 0.0, 0.0]], [[1, -1, 0, 0]]),
    ("multilabel_margin_loss", [[0.0, 1.0, np.nan, 3.0]], [[1, -1, 0, 0]]),
    ("multi_margin_loss", [[np.inf, np.inf, 0.0, 0.0]], [1]),
    ("multi_margin_loss", [[0.0, 1.0, np.nan, 3.0]], [1])])
def test_margin_losses_drop_nan_terms_as_torchs_kernels(name, x, target):
    # torch's kernels add a term only where it is > 0: inf - inf or a NaN logit counts 0
    out = []
    for lib in (torch, ember):
        xs = lib.tensor(x, requires_grad=True)
        loss = getattr(lib.nn.functional, name)(xs, lib.tensor(target))
        loss.backward()
        out.append((loss.item(), xs.grad.numpy()))
    np.testing.assert_allclose(out[1][0], out[0][0], equal_nan=True)
    np.testing.assert_allclose(out[1][1], out[0][1], equal_nan=True)
