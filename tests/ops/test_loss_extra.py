"""multilabel_margin_loss, triplet_margin_with_distance_loss, ctc_loss, local response norms,
rrelu, alpha dropouts and gumbel_softmax against PyTorch, finite differences and statistics."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.autograd.gradcheck import gradcheck
from ember.ops.local_response_norm import cross_map_lrn2d
from tests.ops.optable import Const, OpCase, S, arg, op_tests

LISTS = Const(np.array([[3, 0, -1, 1], [1, 1, 2, -1], [0, 1, 2, 3]]))
PADDED = Const(np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]]))
CONCAT = Const(np.array([1, 2, 2, 3, 1, 4]))


def _cos_distance(x1, x2):
    cos = F.cosine_similarity if isinstance(x1, ember.Tensor) else TF.cosine_similarity
    return 1 - cos(x1, x2)


def _ctc(lengths, targets=PADDED, **kw):
    inputs, labels = lengths

    def mine(x, t):
        return F.ctc_loss(x.log_softmax(-1), t, inputs, labels, **kw)

    def ref(x, t):
        return TF.ctc_loss(x.log_softmax(-1), t, inputs, labels, **kw)
    return mine, ref


CTC_CASES = []
for i, (kw, targets) in enumerate([({}, PADDED), ({"reduction": "sum"}, CONCAT),
                                   ({"reduction": "none", "blank": 2},
                                    Const(np.array([[1, 3, 3], [3, 1, 0], [4, 0, 0]]))),
                                   ({"reduction": "none", "zero_infinity": True}, PADDED)]):
    lengths = ((7, 5, 1), (3, 2, 1)) if i < 3 else ((7, 2, 3), (3, 2, 1))  # 2 frames < 3
    mine, ref = _ctc(lengths, **kw)
    CTC_CASES.append(OpCase(f"ctc_loss_{i}", mine, ref, [S(arg(7, 3, 5), targets)],
                            gradgrad=False, jvp=False))
unbatched = _ctc(((6,), (2,)))
CTC_CASES.append(OpCase("ctc_loss_unbatched", *unbatched,
                        [S(arg(6, 4), Const(np.array([1, 3])))], gradgrad=False, jvp=False))

CASES = [
    OpCase("multilabel_margin_loss", F.multilabel_margin_loss, TF.multilabel_margin_loss, [
        S(arg(3, 4), LISTS),
        S(arg(3, 4), LISTS, reduction="none"),
        S(arg(3, 4), LISTS, reduction="sum"),
        S(arg(4), Const(np.array([2, -1, 0, 0])), reduction="none"),
    ]),
    OpCase("triplet_margin_with_distance_loss", F.triplet_margin_with_distance_loss,
           TF.triplet_margin_with_distance_loss, [
               S(arg(4, 3), arg(4, 3), arg(4, 3), margin=2.0),
               S(arg(4, 3), arg(4, 3), arg(4, 3), swap=True, reduction="none", margin=3.0),
               S(arg(4, 3), arg(4, 3), arg(4, 3), distance_function=_cos_distance,
                 reduction="sum"),
           ]),
    OpCase("local_response_norm", F.local_response_norm, TF.local_response_norm, [
        S(arg(2, 5, 3, 3), size=3, alpha=0.5, beta=0.75, k=1.5),
        S(arg(2, 5, 4), size=2, alpha=0.8, beta=0.5, k=1.0),
        S(arg(2, 4, 2, 2, 2), size=4, alpha=0.3),
        S(arg(1, 3, 3), size=7, alpha=1.0, beta=1.2, k=2.0),
    ]),
    # for odd sizes the legacy layer is local_response_norm; see test_cross_map_lrn2d below
    OpCase("cross_map_lrn2d", cross_map_lrn2d, TF.local_response_norm, [
        S(arg(2, 6, 3, 3), size=3, alpha=0.5, beta=0.75, k=1.5),
        S(arg(1, 4, 2, 2), size=5, alpha=0.9, beta=0.6, k=1.0),
    ]),
    OpCase("rrelu_eval", F.rrelu, TF.rrelu, [
        S(arg(3, 4)), S(arg(5), lower=0.1, upper=0.6),
        S(arg(2, 3), lower=0.2, upper=0.2, training=False),
    ]),
    *CTC_CASES,
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_multilabel_margin_loss_edges():
    empty = F.multilabel_margin_loss(ember.zeros(0, 4), ember.zeros(0, 4, dtype=ember.int64))
    assert math.isnan(empty.item())  # the mean of nothing, as multi_margin_loss's and
    # cross_entropy's (PyTorch 2.13 returns uninitialized memory here)
    with pytest.raises(IndexError, match="multilabel_margin_loss"):
        F.multilabel_margin_loss(ember.randn(2, 4), ember.tensor([[5, -1, 0, 0], [0] * 4]))
    with pytest.raises(ValueError, match=r"same shape.*\(2, 4\) and \(1, 3\)"):
        F.multilabel_margin_loss(ember.randn(2, 4), ember.tensor([[1, -1, 0]]))
    with pytest.raises(TypeError, match="int64 class indices, got float32"):
        F.multilabel_margin_loss(ember.randn(2, 4), ember.zeros(2, 4))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 0)])
def test_multilabel_margin_loss_refuses_no_classes(shape):
    # PyTorch: "Expected non-empty vector or matrix with optional 0-dim batch size"
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        TF.multilabel_margin_loss(torch.zeros(shape), torch.zeros(shape, dtype=torch.int64))
    with pytest.raises(ember.ShapeError, match=rf"multilabel_margin_loss: expected a non-empty "
                       rf"input of shape \(C,\) or \(N, C\), got {re.escape(str(shape))}"):
        F.multilabel_margin_loss(ember.zeros(*shape), ember.zeros(*shape, dtype=ember.int64))


def test_triplet_errors():
    x = ember.randn(2, 3)
    for fn in (F.triplet_margin_loss, F.triplet_margin_with_distance_loss):
        with pytest.raises(ValueError, match="margin must be greater than 0, got -1"):
            fn(x, x, x, margin=-1)
        with pytest.raises(ValueError, match="same number of dimensions"):
            fn(x, x, ember.randn(3))


def test_ctc_loss_raw_gradient_is_pytorchs():
    """The gradient w.r.t. log_probs is PyTorch's (it assumes log_softmax inputs), not the
    exact one: the two differ by exp(log_probs) on live frames."""
    rng = np.random.default_rng(0)
    lp = np.log(rng.dirichlet(np.ones(5), size=(6, 2)))
    targets, lengths = np.array([[1, 2], [3, 0]]), ((6, 4), (2, 1))
    t = torch.tensor(lp, requires_grad=True)
    e = ember.tensor(lp, requires_grad=True)
    TF.ctc_loss(t, torch.tensor(targets), *lengths, reduction="sum").backward()
    F.ctc_loss(e, ember.tensor(targets), *lengths, reduction="sum").backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert not e.grad.numpy()[4:, 1].any()  # past the input length


def test_ctc_loss_impossible_and_empty():
    lp = ember.randn(3, 2, 4, dtype=ember.float64).log_softmax(2)
    targets = ember.tensor([[1, 1, 1], [2, 0, 0]])
    loss = F.ctc_loss(lp, targets, (3, 0), (3, 0), reduction="none")
    assert loss.tolist() == [float("inf"), 0.0]  # 3 repeats need 5 frames; nothing fits none
    assert F.ctc_loss(lp, targets, (3, 0), (3, 1), reduction="none").tolist()[1] == np.inf
    x = lp.detach().requires_grad_()
    F.ctc_loss(x, targets, (3, 3), (3, 1), zero_infinity=True).backward()
    assert np.isfinite(x.grad.numpy()).all() and not x.grad.numpy()[:, 0].any()


def test_ctc_loss_float32_matches():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 2, 6)).astype(np.float32)
    args = (np.array([[1, 2, 3], [4, 5, 0]]), (8, 7), (3, 2))
    mine = F.ctc_loss(ember.tensor(x).log_softmax(2), ember.tensor(args[0]), *args[1:])
    ref = TF.ctc_loss(torch.tensor(x).log_softmax(2), torch.tensor(args[0]), *args[1:])
    assert mine.dtype is ember.float32
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-5)


def test_ctc_loss_errors():
    lp = ember.randn(4, 2, 5).log_softmax(2)
    t = ember.tensor([[1, 2], [3, 0]])
    with pytest.raises(ValueError, match="input_lengths must lie in"):
        F.ctc_loss(lp, t, (5, 3), (2, 1))
    with pytest.raises(ValueError, match="shorter than the longest target length 3"):
        F.ctc_loss(lp, t, (4, 3), (3, 1))
    with pytest.raises(ValueError, match="one length per sequence"):
        F.ctc_loss(lp, t, (4, 3, 1), (2, 1))
    with pytest.raises(IndexError, match=r"class indices in \[0, 5\)"):
        F.ctc_loss(lp, ember.tensor([[1, 9], [3, 0]]), (4, 3), (2, 1))
    with pytest.raises(ValueError, match="hold 3 labels but target_lengths sum to 4"):
        F.ctc_loss(lp, ember.tensor([1, 2, 3]), (4, 3), (2, 2))
    with pytest.raises(IndexError, match="blank"):
        F.ctc_loss(lp, t, (4, 3), (2, 1), blank=5)
    with pytest.raises(TypeError, match="integer class indices"):
        F.ctc_loss(lp, t.float(), (4, 3), (2, 1))
    x = lp.detach().requires_grad_()
    (g,) = ember.autograd.grad(F.ctc_loss(x, t, (4, 3), (2, 1)), [x], create_graph=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        g.sum().backward()


def test_cross_map_lrn2d():
    """Ember's window is the documented one; PyTorch's port keeps channel 0 in the window of
    the channels from (size + 1) // 2 on, so the two agree on the channels before."""
    x = np.random.default_rng(2).standard_normal((2, 6, 3, 3))
    for size in (3, 4, 5):
        mine = cross_map_lrn2d(ember.tensor(x), size, 0.5, 0.75, 1.5).numpy()
        ref = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(torch.tensor(x)).numpy()
        agree = (size + 1) // 2
        np.testing.assert_allclose(mine[:, :agree], ref[:, :agree], rtol=1e-12)
        reach = (size - 1) // 2
        sq = np.pad(x * x, ((0, 0), (reach, reach), (0, 0), (0, 0)))
        window = sum(sq[:, i:i + 6] for i in range(2 * reach + 1))
        np.testing.assert_allclose(mine, x * (1.5 + 0.5 / size * window) ** -0.75, rtol=1e-12)
        e = ember.tensor(x, requires_grad=True)
        assert gradcheck(lambda t, s=size: cross_map_lrn2d(t, s, 0.5, 0.75, 1.5), (e,))
    with pytest.raises(ValueError, match="4-D input"):
        cross_map_lrn2d(ember.randn(2, 3, 4), 3)
    with pytest.raises(ValueError, match="3 or more dimensions"):
        F.local_response_norm(ember.randn(2, 3), 3)
    assert F.local_response_norm(ember.zeros(0, 3, 2), 3).shape == (0, 3, 2)


def test_rrelu_training():
    g = ember.Generator().manual_seed(0)
    x = ember.tensor(-np.linspace(0.5, 3.0, 20000), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.4, training=True, generator=g)
    slopes = (y / x).detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4
    assert abs(slopes.mean() - 0.25) < 0.005 and abs(slopes.std() - 0.3 / 12 ** 0.5) < 0.005
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)  # the gradient is the slope drawn
    pos = ember.tensor([0.0, 1.0, 2.0])
    assert F.rrelu(pos, training=True).tolist() == [0.0, 1.0, 2.0]
    z = ember.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    F.rrelu(z, 0.2, 0.2, training=True).sum().backward()
    assert z.grad.tolist() == pytest.approx([0.2, 0.2, 1.0])  # 0 takes the slope, as torch's
    w = ember.tensor([-4.0, 2.0])
    assert F.rrelu_(w, 0.25, 0.25) is w and w.tolist() == [-1.0, 2.0]
    with pytest.raises(ValueError, match="lower bound"):
        F.rrelu(x, 0.5, 0.2)
    with pytest.raises(TypeError, match="rrelu"):
        F.rrelu(ember.tensor([1, 2]))


@pytest.mark.parametrize("fn", [F.alpha_dropout, F.feature_alpha_dropout])
def test_alpha_dropout_keeps_mean_and_variance(fn):
    g = ember.Generator().manual_seed(1)
    x = ember.randn(400, 50, 10, generator=g)
    for p in (0.2, 0.5):
        y = fn(x, p, training=True, generator=g)
        assert abs(y.mean().item()) < 0.02 and abs(y.std().item() - 1) < 0.02
        a = (1 / ((1.7580993408473766 ** 2 * p + 1) * (1 - p))) ** 0.5
        dropped = -1.7580993408473766 * a * (1 - p)
        kept = np.isclose(y.numpy(), a * x.numpy() + 1.7580993408473766 * a * p)
        assert (kept | np.isclose(y.numpy(), dropped)).all()
        if fn is F.feature_alpha_dropout:  # one draw per (N, C) channel
            assert (kept.all(-1) | ~kept.any(-1)).all()
        assert abs(kept.mean() - (1 - p)) < 0.02
    assert fn(x, 0.5) is x and fn(x, 0.0, training=True) is x
    assert not fn(x, 1.0, training=True).numpy().any()
    with pytest.raises(ValueError, match="between 0 and 1"):
        fn(x, 1.5, training=True)


def test_alpha_dropout_gradient_and_torch_constants():
    x = ember.randn(1000, 20, dtype=ember.float64, requires_grad=True)
    y = F.alpha_dropout(x, 0.3, training=True)
    y.sum().backward()
    a = 1 / ((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7) ** 0.5
    kept = x.grad.numpy() != 0
    np.testing.assert_allclose(x.grad.numpy()[kept], a)
    for out in (y.detach().numpy(),
                TF.alpha_dropout(torch.tensor(x.detach().numpy()), 0.3, training=True).numpy()):
        xs = x.detach().numpy()  # both frameworks give a·x + b on kept units, one value else
        assert (np.isclose(out, a * xs + 1.7580993408473766 * a * 0.3)
                | np.isclose(out, -1.7580993408473766 * a * 0.7)).all()
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(ember.randn(4), 0.5, True)


def test_gumbel_softmax():
    g = ember.Generator().manual_seed(3)
    logits = ember.tensor([[1.0, 0.0, -1.0]], dtype=ember.float64).expand((20000, 3))
    soft = F.gumbel_softmax(logits, tau=0.5, generator=g)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0)
    hard = F.gumbel_softmax(logits, hard=True, generator=g).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    # argmax of logits + Gumbel noise samples the softmax distribution exactly
    probs = torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0).numpy()
    np.testing.assert_allclose(hard.mean(0), probs, atol=0.01)
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    (F.gumbel_softmax(x, hard=True, dim=0, generator=ember.Generator().manual_seed(0))
     * ember.arange(5.0)).sum().backward()
    y = x.detach().requires_grad_()
    (F.gumbel_softmax(y, dim=0, generator=ember.Generator().manual_seed(0))
     * ember.arange(5.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy())  # straight-through
    assert F.gumbel_softmax(ember.tensor(2.0), hard=True).item() == 1.0
    with pytest.warns(DeprecationWarning, match="eps"):
        F.gumbel_softmax(x, eps=1e-5)


@pytest.mark.parametrize("pos_weight", [None, [0.5, 3.0]])
def test_bce_with_logits_gradient_does_not_cancel_for_confident_logits(pos_weight):
    # the gradient (1 - t) - w sigmoid(-x) cancelled where sigmoid(x) - t is tiny: at x = -40,
    # t = 0 it was 0 (torch 4.25e-18), at x = -27.6 off by 9e-5 relative (distrib54, mend54e)
    x = np.array([[-40.0, -27.631], [30.0, -10.0], [5.0, -3.0]])
    t = np.array([[0.0, 0.0], [1.0, 0.0], [0.3, 1.0]])
    xe = ember.tensor(x, requires_grad=True)
    pw_e = None if pos_weight is None else ember.tensor(np.array(pos_weight))
    loss = F.binary_cross_entropy_with_logits(xe, ember.tensor(t), reduction="sum",
                                              pos_weight=pw_e)
    loss.backward()
    xt = torch.tensor(x, requires_grad=True)
    pw_t = None if pos_weight is None else torch.tensor(pos_weight, dtype=torch.float64)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        xt, torch.tensor(t), reduction="sum", pos_weight=pw_t)
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    pw = 1.0 if pos_weight is None else np.array(pos_weight)
    exact = (1 - t) / (1 + np.exp(-x)) - pw * t / (1 + np.exp(x))  # no cancellation
    np.testing.assert_allclose(xe.grad.numpy(), exact, rtol=1e-9)
    np.testing.assert_allclose(xt.grad.numpy(), exact, rtol=2e-3)  # (torch's cancels at x=30)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_bce_with_logits_primitive_matches_torch_and_finite_differences(reduction):
    rng = np.random.default_rng(5)
    x, t = rng.standard_normal((3, 4)) * 4, rng.random((3, 4))
    w, pw = rng.random(4) + 0.5, rng.random(4) * 3
    ours = [ember.tensor(a, requires_grad=True) for a in (x, t)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, t)]
    loss = F.binary_cross_entropy_with_logits(*ours, ember.tensor(w), reduction=reduction,
                                              pos_weight=ember.tensor(pw))
    want = torch.nn.functional.binary_cross_entropy_with_logits(
        *theirs, torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw))
    np.testing.assert_allclose(loss.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    up = rng.standard_normal(tuple(want.shape))
    loss.backward(ember.tensor(up))
    want.backward(torch.tensor(up))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9)
    leaves = [ember.tensor(a, requires_grad=True) for a in (x, t, w, pw)]

    def f(x, t, w, pw):
        return F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)
    assert ember.autograd.gradcheck(f, leaves, check_forward_ad=True)
    assert ember.autograd.gradgradcheck(f, leaves)
    batched = ember.func.vmap(lambda x, t: F.binary_cross_entropy_with_logits(
        x, t, reduction=reduction, pos_weight=ember.tensor(pw)))(*ours)
    for i in range(3):
        np.testing.assert_allclose(batched[i].detach().numpy(), F.binary_cross_entropy_with_logits(
            ours[0][i], ours[1][i], reduction=reduction,
            pos_weight=ember.tensor(pw)).detach().numpy(), rtol=1e-12)


def test_bce_with_logits_runs_in_float32_under_autocast_as_torch():
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    t = (np.random.default_rng(1).random((4, 3)) < 0.5).astype(np.float32)
    outs = []
    for lib, fn in ((torch, torch.nn.functional), (ember, F)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            outs.append(fn.binary_cross_entropy_with_logits(
                lib.tensor(x).to(lib.bfloat16), lib.tensor(t).to(lib.bfloat16)))
    assert str(outs[1].dtype) == "ember.float32" and outs[0].dtype is torch.float32
    assert outs[1].item() == outs[0].item()
