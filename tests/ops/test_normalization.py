"""Normalisation functions against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
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


CASES = [
    OpCase("layer_norm", F.layer_norm, TF.layer_norm, [
        S(arg(3, 4), Const((4,)), arg(4), arg(4)),
        S(arg(2, 3, 4, noncontig=True), Const((3, 4)), arg(3, 4), arg(3, 4), eps=1e-3),
        S(arg(2, 5), Const((5,))),
        S(arg(0, 4), Const((4,)), arg(4), arg(4)),
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


def test_batch_norm_updates_running_stats_like_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 2, 2))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(2):
        F.batch_norm(ember.from_numpy(x), rm, rv, training=True, momentum=0.3)
        TF.batch_norm(torch.from_numpy(x), trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())  # unbiased variance, as torch
    assert rm._version == 2


def test_instance_norm_running_stats_like_torch():
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    F.instance_norm(ember.from_numpy(x), rm, rv)
    TF.instance_norm(torch.from_numpy(x), trm, trv)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())


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
