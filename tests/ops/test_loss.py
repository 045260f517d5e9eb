"""Loss functions against PyTorch and finite differences."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import Const, OpCase, S, arg, op_tests

T4 = Const(np.array([0, 4, 2, 1]))
T4_IGNORED = Const(np.array([0, -100, 2, 4]))
T_SPATIAL = Const(np.array([[[0, 2], [1, 1]], [[2, -100], [0, 1]]]))
W5 = arg(5, low=0.5, high=2.0, grad=False)
W3 = arg(3, low=0.5, high=2.0, grad=False)
PROBS = arg(4, 5, low=0.0, high=1.0, grad=False)
UNIT = dict(low=0.05, high=0.95)

CE = [
    S(arg(4, 5), T4),
    S(arg(4, 5, noncontig=True), T4, W5),
    S(arg(4, 5), T4_IGNORED, W5, reduction="sum"),
    S(arg(4, 5), T4_IGNORED, W5),                                 # weighted mean, ignored
    S(arg(4, 5), T4_IGNORED, reduction="none"),
    S(arg(2, 3, 2, 2), T_SPATIAL, W3),                            # (N, C, d1, d2)
    S(arg(5), Const(np.array(3))),                                # unbatched
    S(arg(4, 5), Const(np.array([1, 1, 0, 3])), ignore_index=1),
    S(arg(0, 5), Const(np.zeros(0, dtype=np.int64)), reduction="sum"),  # empty
]
CE_SMOOTH = [
    S(arg(4, 5), T4, label_smoothing=0.1),
    S(arg(4, 5), T4_IGNORED, W5, label_smoothing=0.2),
    S(arg(4, 5), T4_IGNORED, W5, label_smoothing=0.2, reduction="sum"),
    S(arg(2, 3, 2, 2), T_SPATIAL, W3, label_smoothing=0.3, reduction="none"),
]
CE_PROBS = [
    S(arg(4, 5), PROBS),
    S(arg(4, 5), PROBS, W5, reduction="sum"),
    S(arg(4, 5), PROBS, W5, label_smoothing=0.25),
    S(arg(2, 3, 2, 2), arg(2, 3, 2, 2, low=0.0, high=1.0, grad=False), reduction="none"),
    S(arg(4, 5), arg(4, 5, low=0.0, high=1.0)),                   # gradient to the target too
]
PAIR = [
    S(arg(3, 4), arg(3, 4)),
    S(arg(3, 4, noncontig=True), arg(3, 4), reduction="sum"),
    S(arg(3, 4), arg(3, 4), reduction="none"),
    S(arg(), arg()),
]

CASES = [
    OpCase("cross_entropy", F.cross_entropy, TF.cross_entropy, CE),
    OpCase("cross_entropy_smoothing", F.cross_entropy, TF.cross_entropy, CE_SMOOTH),
    OpCase("cross_entropy_probs", F.cross_entropy, TF.cross_entropy, CE_PROBS),
    OpCase("nll_loss", F.nll_loss, TF.nll_loss, CE[:6]),
    OpCase("mse_loss", F.mse_loss, TF.mse_loss, PAIR),
    OpCase("mse_loss_weight", lambda x, t, w, **k: F.mse_loss(x, t, weight=w, **k),
           lambda x, t, w, **k: TF.mse_loss(x, t, weight=w, **k),
           [S(arg(3, 4), arg(3, 4), arg(3, 4, low=0.5, high=2.0)),
            S(arg(3, 4), arg(3, 4), arg(3, 4, grad=False), reduction="sum")]),
    OpCase("l1_loss_weight", lambda x, t, w, **k: F.l1_loss(x, t, weight=w, **k),
           lambda x, t, w, **k: TF.l1_loss(x, t, weight=w, **k),
           [S(arg(3, 4), arg(3, 4), arg(3, 4, low=0.5, high=2.0))]),
    OpCase("huber_loss_weight", lambda x, t, w, **k: F.huber_loss(x, t, weight=w, **k),
           lambda x, t, w, **k: TF.huber_loss(x, t, weight=w, **k),
           [S(arg(3, 4), arg(3, 4), arg(3, 4, low=0.5, high=2.0))]),
    OpCase("l1_loss", F.l1_loss, TF.l1_loss, PAIR),
    OpCase("smooth_l1_loss", F.smooth_l1_loss, TF.smooth_l1_loss,
           PAIR + [S(arg(3, 4), arg(3, 4), beta=0.5), S(arg(3, 4), arg(3, 4), beta=0.0),
                   S(arg(2, 3, 4), arg(2, 3, 4, grad=False), beta=2.0, reduction="none")]),
    OpCase("huber_loss", F.huber_loss, TF.huber_loss,
           PAIR[:3] + [S(arg(3, 4), arg(3, 4), delta=0.7, reduction="sum"),
                       S(arg(), arg(), delta=0.3),
                       S(arg(2, 3, 4), arg(2, 3, 4, grad=False), delta=1.5, reduction="none")]),
    OpCase("binary_cross_entropy", F.binary_cross_entropy, TF.binary_cross_entropy, [
        S(arg(3, 4, **UNIT), arg(3, 4, low=0.0, high=1.0, grad=False)),
        S(arg(3, 4, **UNIT), arg(3, 4, low=0.0, high=1.0, grad=False),
          arg(4, low=0.5, high=2.0, grad=False), reduction="sum"),
        S(arg(3, 4, **UNIT, noncontig=True), arg(3, 4, low=0.0, high=1.0, grad=False),
          reduction="none"),
        S(arg(3, 4, **UNIT), arg(3, 4, low=0.0, high=1.0)),       # the target's gradient too
    ]),
    OpCase("binary_cross_entropy_with_logits", F.binary_cross_entropy_with_logits,
           TF.binary_cross_entropy_with_logits, [
               S(arg(3, 4), arg(3, 4, low=0.0, high=1.0, grad=False)),
               S(arg(3, 4, low=-30, high=30), arg(3, 4, low=0.0, high=1.0)),
           ]),
    OpCase("bce_with_logits_pos_weight",
           lambda x, t, w, p, **k: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=p, **k),
           lambda x, t, w, p, **k: TF.binary_cross_entropy_with_logits(x, t, w, pos_weight=p,
                                                                       **k),
           [S(arg(3, 4), arg(3, 4, low=0.0, high=1.0, grad=False),
              arg(3, 1, low=0.5, high=2.0, grad=False), arg(4, low=0.5, high=3.0, grad=False),
              reduction="sum")]),
    OpCase("kl_div", F.kl_div, TF.kl_div, [
        S(arg(3, 4, low=-3.0, high=-0.1), arg(3, 4, low=0.0, high=1.0), reduction="batchmean"),
        S(arg(3, 4, low=-3.0, high=-0.1), arg(3, 4, low=0.0, high=1.0), reduction="sum"),
        S(arg(3, 4, low=-3.0, high=-0.1), arg(3, 4, low=-3.0, high=0.0), reduction="none",
          log_target=True),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_cross_entropy_target_out_of_range_names_the_class():
    with pytest.raises(IndexError, match="cross_entropy: target class 7 is out of range for "
                                         "5 classes"):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 7, 1]))
    with pytest.raises(IndexError, match="target class -3"):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, -3, 1]))


def _classifier_steps(loss_fn):
    """The same training step, eager and compiled, on two identical models."""
    steps = []
    for _ in range(2):
        ember.manual_seed(0)
        model = ember.nn.Linear(4, 3)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, model=model, opt=opt):
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        steps.append((step, model))
    return steps[0], (ember.jit.compile(steps[1][0]), steps[1][1])


@pytest.mark.parametrize("loss_fn, ignore", [
    (F.cross_entropy, -100),
    (lambda x, y: F.cross_entropy(x, y, ignore_index=-1, label_smoothing=0.1), -1),
    (lambda x, y: F.nll_loss(F.log_softmax(x, 1), y, weight=ember.tensor([1.0, 2.0, 0.5]),
                             ignore_index=2), 2),
])
def test_compiled_class_losses_follow_eager_and_check_targets_at_every_call(loss_fn, ignore):
    (eager, me), (compiled, mc) = _classifier_steps(loss_fn)
    x = ember.randn(4, 4)
    for y in ([0, 1, 2, 0], [2, ignore, 1, 1], [ignore, 0, 0, 1]):
        y = ember.tensor(y)
        np.testing.assert_allclose(compiled(x, y).item(), eager(x, y).item(), rtol=1e-6)
    np.testing.assert_allclose(mc.weight.detach().numpy(), me.weight.detach().numpy(),
                               rtol=1e-6)
    for bad in (b for b in (-1, 3, -5) if b != ignore):  # NumPy would wrap negative ones
        for step in (eager, compiled):
            with pytest.raises(ember.errors.IndexOutOfRange,
                               match=rf"target class {bad} is out of range for 3 classes; "
                                     rf"expected values in \[0, 2\] or ignore_index={ignore}\. "
                                     "Hint"):
                step(x, ember.tensor([0, bad, 1, 0]))


def test_loss_errors():
    with pytest.raises(ember.ShapeError, match="target of shape"):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 1]))
    with pytest.raises(ember.DTypeError, match="int64"):
        F.nll_loss(ember.randn(3, 5), ember.tensor([True, False, True]))
    for dtype in ("int32", "int16", "int8"):  # (torch takes only int64 and uint8 too)
        with pytest.raises(ember.DTypeError, match=f"int64 .*got {dtype}. Hint: .*long"):
            F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 1, 2], dtype=dtype))
    assert F.nll_loss(ember.zeros(2, 3), ember.tensor([0, 2], dtype=ember.uint8)).item() == 0
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(ember.randn(3), ember.randn(3), reduction="avg")
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))
    with pytest.raises(ValueError, match="same as input size"):
        F.binary_cross_entropy_with_logits(ember.randn(3), ember.randn(2))


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x, t = ember.randn(2, 3), ember.tensor([-100, -100])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(F.cross_entropy(x, t).item())
    assert np.isnan(TF.cross_entropy(torch.randn(2, 3), torch.tensor([-100, -100])).item())


@pytest.mark.parametrize("loss, kwargs", [
    ("cross_entropy", {}),
    ("cross_entropy", {"label_smoothing": 0.1}),
    ("cross_entropy", {"weight": [0.5, 1.0, 2.0]}),
    ("cross_entropy", {"weight": [0.5, 1.0, 2.0], "label_smoothing": 0.2}),
    ("cross_entropy", {"reduction": "sum", "label_smoothing": 0.1}),
    ("nll_loss", {}),
    ("nll_loss", {"weight": [0.5, 1.0, 2.0], "reduction": "none"}),
])
def test_all_ignored_targets_give_zero_gradient_like_torch(loss, kwargs):
    x = np.random.default_rng(0).standard_normal((4, 3))
    t = np.full(4, -100)
    ours, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = getattr(F, loss)(ours, ember.tensor(t), **{
            k: ember.tensor(v) if k == "weight" else v for k, v in kwargs.items()})
    want = getattr(TF, loss)(theirs, torch.tensor(t), **{
        k: torch.tensor(v, dtype=torch.float64) if k == "weight" else v
        for k, v in kwargs.items()})
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), equal_nan=True)
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), 0.0)


def test_legacy_size_average_and_reduce():
    x, t = ember.randn(3, 4), ember.randn(3, 4)
    np.testing.assert_allclose(F.mse_loss(x, t, size_average=False).item(),
                               F.mse_loss(x, t, reduction="sum").item())
    assert F.mse_loss(x, t, reduce=False).shape == (3, 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bce_at_saturated_probabilities_matches_torch(dtype):
    # each log clamped at -100 (a loss of exactly 100 at 0 and 1), the input's gradient
    # bounded by 1e12 (the clamped log's own derivative overflowed float32 below ~3e-39)
    x = np.array([0.0, 1e-45 if dtype == "float32" else 1e-320, 1e-40, 1e-30, 1e-13, 1e-8,
                  0.3, 1 - 1e-7, 1.0], dtype)
    t = np.array([1.0, 1.0, 1.0, 1.0, 0.3, 0.0, 0.7, 1.0, 0.0], dtype)
    ours = [ember.from_numpy(a.copy()).requires_grad_() for a in (x, t)]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in (x, t)]
    loss = F.binary_cross_entropy(*ours, reduction="none")
    want = TF.binary_cross_entropy(*theirs, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert loss.detach().numpy()[0] == 100.0 and loss.detach().numpy()[-1] == 100.0
    loss.sum().backward()
    want.sum().backward()
    for got, ref in zip(ours, theirs):  # (the target's gradient is ±inf at 0 and 1, as torch's)
        np.testing.assert_allclose(got.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
    assert np.abs(ours[0].grad.numpy()).max() <= 1.0001e12


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_pointwise_losses_warn_when_shapes_broadcast_like_torch(name):
    x, t = ember.randn(4, 1), ember.randn(4)
    with pytest.warns(UserWarning, match=f"{name}: the target's shape \\(4,\\) differs"):
        assert getattr(F, name)(x, t, reduction="none").shape == (4, 4)
    with pytest.warns(UserWarning):
        getattr(TF, name)(torch.randn(4, 1), torch.randn(4))
    with pytest.raises(ember.ShapeError, match=f"{name}: shapes \\(2, 3\\) and \\(4,\\)"):
        getattr(F, name)(ember.randn(2, 3), ember.randn(4))


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_take_bool_targets_as_torch(name):
    for lib, f in ((ember, F), (torch, TF)):
        x = lib.tensor([0.2, 0.7])
        loss = getattr(f, name)(x, lib.tensor([False, True]))
        assert loss.dtype == lib.float32
        np.testing.assert_allclose(float(loss), float(getattr(f, name)(x, lib.tensor([0., 1.]))))


@pytest.mark.parametrize("dtype", ["int64", "float64", "bool"])
def test_binary_cross_entropy_and_huber_refuse_a_target_of_another_dtype_as_torch(dtype):
    # (binary_cross_entropy always; huber_loss where its gradient is needed: PyTorch's
    # backward refuses it, without one it computes in the input's dtype)
    for lib, f, error in ((ember, F, ember.errors.DTypeError), (torch, TF, RuntimeError)):
        x = lib.tensor([0.2, 0.7], requires_grad=True)
        target = lib.tensor([0, 1]).to(getattr(lib, dtype))
        with pytest.raises(error, match="Found dtype|dtype"):
            f.binary_cross_entropy(x, target)
        with pytest.raises(error, match="Found dtype|dtype"):
            f.huber_loss(x, target).backward()
        loss = f.huber_loss(x.detach(), target)
        assert loss.dtype == lib.float32
        np.testing.assert_allclose(float(loss), 0.0325, rtol=1e-5)


@pytest.mark.parametrize("name, kw", [("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                      ("huber_loss", {"delta": 0.7})])
def test_smooth_l1_and_huber_primitive_matches_torch_at_special_values(name, kw):
    # one fused primitive each way; inf, NaN, |d| == beta, promotion and empty input as torch
    values = [0.0, 0.3, -0.7, 0.5, 0.7, -3.0, float("inf"), -float("inf"), float("nan"), 1e30]
    x_np = np.array(values, dtype=np.float32)
    for red in ("none", "mean", "sum"):
        x, xt = ember.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
        loss = getattr(F, name)(x, ember.zeros(10), reduction=red, **kw)
        want = getattr(TF, name)(xt, torch.zeros(10), reduction=red, **kw)
        np.testing.assert_allclose(loss.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        loss.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    assert loss.grad_fn.name() == want.grad_fn.name()
    x64 = ember.tensor([0.2, 3.0], dtype=ember.float64)
    if name == "smooth_l1_loss":  # (huber refuses another dtype, tested above)
        assert F.smooth_l1_loss(ember.tensor([0.2, 3.0]), x64).dtype == ember.float64
    empty = getattr(F, name)(ember.zeros(0, 3), ember.zeros(0, 3), **kw)
    assert np.isnan(float(empty))
    assert float(getattr(F, name)(x64, 1.0, reduction="sum", **kw)) == pytest.approx(
        float(getattr(TF, name)(torch.tensor([0.2, 3.0], dtype=torch.float64),
                                torch.ones(2, dtype=torch.float64), reduction="sum", **kw)))


def test_smooth_l1_second_derivative_is_zero_past_beta_as_torch():
    # PyTorch's double backward passes where |d| < beta, strictly
    for lib, f in ((ember, F), (torch, TF)):
        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(f.smooth_l1_loss(x, lib.zeros(3, dtype=lib.float64),
                                                  reduction="sum"), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        np.testing.assert_array_equal(h.numpy(), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_smooth_l1_with_a_beta_below_float32s_range_is_torchs(dtype):
    # (1e-50 is 0 in float32, where float32 and below compute: the loss is L1, as torch's;
    # float64 keeps it, and its quadratic zone)
    got = []
    for lib, f in ((ember, F), (torch, TF)):
        x = lib.tensor([0.5, -2.0, 1e-51, 0.0], dtype=getattr(lib, dtype), requires_grad=True)
        loss = f.smooth_l1_loss(x, lib.zeros(4, dtype=getattr(lib, dtype)), beta=1e-50,
                                reduction="none")
        loss.sum().backward()
        got.append((loss.detach().double().numpy(), x.grad.double().numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-6)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-6)


@pytest.mark.parametrize("target", [[0.5, float("nan")], [1.0000001, 0.0], [-0.5, 1.0]])
def test_binary_cross_entropy_refuses_targets_outside_0_1_as_torch(target):
    x, target = np.full(2, 0.5), np.array(target)
    with pytest.raises(RuntimeError, match="target should be between 0 and 1"):
        torch.nn.functional.binary_cross_entropy(torch.tensor(x), torch.tensor(target))
    with pytest.raises(ValueError, match=r"target should be between 0 and 1 \(1 of 2 are not"):
        F.binary_cross_entropy(ember.tensor(x), ember.tensor(target))
    edges = F.binary_cross_entropy(ember.tensor(x), ember.tensor(np.array([1.0, -0.0])))
    assert edges.item() == pytest.approx(np.log(2))
