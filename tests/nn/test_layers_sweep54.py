"""Layer behaviour that a differential sweep of ember.nn's layers against torch 2.13 found
different (nnlayers54): each case is checked against torch."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.errors import ArgumentError


# -- batch_norm refuses a non-positive eps in training and a negative one in evaluation -----
@pytest.mark.parametrize("train, eps", [(True, -1.0), (True, 0.0), (False, -1e-3)])
def test_batch_norm_refuses_bad_eps_like_torch(train, eps):
    x = np.random.default_rng(0).standard_normal((4, 3)) * 0.1
    t = torch.nn.BatchNorm1d(3, eps=eps).double().train(train)
    with pytest.raises(ValueError) as t_err:
        t(torch.tensor(x))
    e = nn.BatchNorm1d(3, eps=eps).double().train(train)
    with pytest.raises(ArgumentError, match="batch_norm: eps must be") as e_err:
        e(ember.tensor(x))
    assert str(t_err.value).split(",")[0].replace("batch_norm eps", "batch_norm: eps") \
        in str(e_err.value)


def test_batch_norm_eval_takes_zero_eps_like_torch():
    x = np.random.default_rng(1).standard_normal((4, 3))
    t = torch.nn.BatchNorm1d(3, eps=0.0).double().eval()
    e = nn.BatchNorm1d(3, eps=0.0).double().eval()
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy())


def test_instance_norm_keeps_taking_any_eps_like_torch():
    x = np.random.default_rng(2).standard_normal((1, 4, 3))
    rm, rv = np.zeros(4), np.ones(4)
    t = torch.nn.functional.instance_norm(torch.tensor(x), torch.tensor(rm), torch.tensor(rv),
                                          use_input_stats=False, eps=-0.5)
    e = nn.functional.instance_norm(ember.tensor(x), ember.tensor(rm), ember.tensor(rv),
                                    use_input_stats=False, eps=-0.5)
    np.testing.assert_allclose(e.numpy(), t.numpy())


# -- InstanceNorm with an input whose channels differ from num_features --------------------
def test_instance_norm_affine_wrong_channels_message_like_torch():
    with pytest.raises(ValueError) as t_err:
        torch.nn.InstanceNorm1d(3, affine=True)(torch.randn(2, 4, 5))
    with pytest.raises(ArgumentError) as e_err:
        nn.InstanceNorm1d(3, affine=True)(ember.randn(2, 4, 5))
    assert str(t_err.value) in str(e_err.value)
    with pytest.raises(ArgumentError, match="at dim=0 to match num_features"):
        nn.InstanceNorm2d(3, affine=True)(ember.randn(4, 5, 5))  # unbatched


def test_instance_norm_not_affine_wrong_channels_warns_like_torch():
    x = np.random.default_rng(3).standard_normal((2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features") as t_rec:
        t = torch.nn.InstanceNorm1d(3)(torch.tensor(x))
    with pytest.warns(UserWarning, match="does not match num_features") as e_rec:
        e = nn.InstanceNorm1d(3)(ember.tensor(x))
    assert str(t_rec[0].message) == str(e_rec[0].message)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_instance_norm_running_stats_wrong_channels_is_a_clear_error():
    with pytest.raises(RuntimeError):  # torch: running_mean should contain 8 elements not 6
        torch.nn.InstanceNorm1d(3, track_running_stats=True)(torch.randn(2, 4, 5))
    with pytest.warns(UserWarning), pytest.raises(
            ember.errors.ShapeError, match=r"instance_norm: running_mean has shape \(3,\) but "
                                           r"the input has 4 channels"):
        nn.InstanceNorm1d(3, track_running_stats=True)(ember.randn(2, 4, 5))
    with pytest.raises(ember.errors.ShapeError, match="running_var has shape"):
        nn.functional.instance_norm(ember.randn(2, 4, 5), ember.zeros(4), ember.ones(3))


# -- recurrent layers' states that are not tensors ----------------------------------------
@pytest.mark.parametrize("make, hx, label, hint", [
    (lambda lib: (lib.nn.GRU(3, 4), lib.randn(5, 2, 3)), lambda lib: (lib.randn(1, 2, 4),),
     "hx", True),
    (lambda lib: (lib.nn.RNN(3, 4), lib.randn(5, 2, 3)), lambda lib: [lib.randn(1, 2, 4)],
     "hx", True),
    (lambda lib: (lib.nn.GRUCell(3, 4), lib.randn(2, 3)), lambda lib: (lib.randn(2, 4),),
     "hx", True),
    (lambda lib: (lib.nn.RNNCell(3, 4), lib.randn(2, 3)), lambda lib: 1.0, "hx", False),
    (lambda lib: (lib.nn.LSTM(3, 4), lib.randn(5, 2, 3)), lambda lib: (lib.randn(1, 2, 4), "a"),
     "cx", False),
])
def test_rnn_non_tensor_state_is_a_clear_error(make, hx, label, hint):
    m, x = make(torch)
    with pytest.raises(AttributeError):  # torch: "'tuple' object has no attribute 'dim'"
        m(x, hx(torch))
    m, x = make(ember)
    with pytest.raises(TypeError, match=rf"{type(m).__name__}\(\): argument '{label}' must be "
                                        "Tensor, not") as err:
        m(x, hx(ember))
    assert ("only LSTM and LSTMCell take a tuple" in str(err.value)) == hint


# -- normalization argument messages ------------------------------------------------------
@pytest.mark.parametrize("make", [lambda lib: lib.nn.functional.layer_norm(lib.randn(2, 3), []),
                                  lambda lib: lib.nn.functional.rms_norm(lib.randn(2, 3), []),
                                  lambda lib: lib.nn.LayerNorm([])(lib.randn(2, 3))])
def test_empty_normalized_shape_message_like_torch(make):
    with pytest.raises(RuntimeError) as t_err:
        make(torch)
    with pytest.raises(ember.errors.ShapeError) as e_err:
        make(ember)
    assert "Expected normalized_shape to be at least 1-dimensional" in str(t_err.value)
    assert "expected normalized_shape to be at least 1-dimensional" in str(e_err.value)


def test_group_norm_groups_message_like_torch():
    with pytest.raises(ValueError) as t_err:
        torch.nn.GroupNorm(3, 4)
    with pytest.raises(ArgumentError) as e_err:
        nn.GroupNorm(3, 4)
    assert str(e_err.value) == str(t_err.value)  # num_channels (4) must be divisible by ...
    with pytest.raises(ArgumentError, match="num_groups must be positive, got 0"):
        nn.GroupNorm(0, 4)  # torch: ZeroDivisionError


# -- convolutions' size arguments of the wrong length -------------------------------------
@pytest.mark.parametrize("make, name", [
    (lambda lib: lib.nn.Conv2d(3, 4, (3, 3, 3)), "kernel_size"),
    (lambda lib: lib.nn.Conv2d(3, 4, (3,), padding="same"), "kernel_size"),
    (lambda lib: lib.nn.Conv2d(3, 4, 3, padding=(1, 2, 3), padding_mode="reflect"), "padding"),
    (lambda lib: lib.nn.Conv1d(3, 4, 3, dilation=(1, 1)), "dilation"),
    (lambda lib: lib.nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=(1, 0, 0)),
     "output_padding"),
])
def test_conv_size_argument_of_wrong_length_is_refused(make, name):
    with pytest.raises((RuntimeError, AttributeError)):  # torch: at forward, often unclear
        make(torch)(torch.randn(1, 3, *(6,) * int(type(make(torch)).__name__[-2])))
    with pytest.raises(ArgumentError, match=f"{name} must be an int or a tuple of"):
        make(ember)


def test_conv_one_element_sizes_still_broadcast_like_torch():
    x = np.random.default_rng(4).standard_normal((1, 3, 7, 7))
    t, e = torch.nn.Conv2d(3, 4, 3, stride=(2,), padding=[1]), nn.Conv2d(3, 4, 3, stride=(2,),
                                                                          padding=[1])
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    np.testing.assert_allclose(e(ember.tensor(x, dtype=ember.float32)).detach().numpy(),
                               t(torch.tensor(x, dtype=torch.float32)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# -- LPPool with norm_type 0 ---------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 3])
def test_lp_pool_zero_norm_type_is_a_clear_error(d):
    with pytest.raises(ZeroDivisionError):  # torch: "float division by zero"
        getattr(torch.nn, f"LPPool{d}d")(0, 2)(torch.ones((1, 2) + (4,) * d))
    with pytest.raises(ArgumentError, match=f"lp_pool{d}d: norm_type must be nonzero"):
        getattr(nn, f"LPPool{d}d")(0, 2)(ember.ones((1, 2) + (4,) * d))


# -- Conv's _conv_forward, which weight-standardised convolutions (timm's StdConv2d) call ---
def _std_conv(lnn, lib):
    class StdConv2d(lnn.Conv2d):
        def forward(self, x):
            w = self.weight
            mean = w.mean(dim=(1, 2, 3), keepdim=True)
            var = w.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
            return self._conv_forward(x, (w - mean) / (var + 1e-6).sqrt(), self.bias)
    return StdConv2d(3, 4, 3, padding=1, padding_mode="reflect").to(lib.float64)


def test_conv_forward_hook_for_weight_standardisation_like_torch():
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 6))
    t, e = _std_conv(torch.nn, torch), _std_conv(nn, ember)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    to, eo = t(tx), e(ex)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    to.square().sum().backward()
    eo.square().sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(e.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-9)


# -- RNNBase's public checks (check_forward_args, permute_hidden, …), as in torch -----------
def _rnn_calls(lib, mode):
    kw = {"proj_size": 2} if mode == "LSTM" else {}
    m = getattr(lib.nn, mode)(3, 4, num_layers=2, bidirectional=True, batch_first=True, **kw)
    x, xp = lib.zeros(2, 5, 3), lib.zeros(7, 3)
    sizes, perm = lib.tensor([2, 2, 2, 1]), lib.tensor([1, 0])
    h = lib.arange(4 * 2 * (2 if kw else 4), dtype=lib.float32).reshape(4, 2, -1)
    c = lib.zeros(4, 2, 4)
    state = (h, c) if mode == "LSTM" else h
    bad = (lib.zeros(4, 3, 2), c) if mode == "LSTM" else lib.zeros(4, 3, 4)
    bad_c = (h, lib.zeros(4, 2, 2)) if mode == "LSTM" else h
    calls = [lambda: m.get_expected_hidden_size(x, None),
             lambda: m.get_expected_hidden_size(xp, sizes),
             lambda: m.check_forward_args(x, state, None),
             lambda: m.check_forward_args(x, bad, None),
             lambda: m.check_forward_args(x, bad_c, None),
             lambda: m.check_input(xp, None),
             lambda: m.check_input(lib.zeros(2, 5, 4), None),
             lambda: m.check_input(xp, sizes),
             lambda: m.permute_hidden(state, None) is state]
    if mode == "LSTM":
        calls += [lambda: m.get_expected_cell_size(x, None),
                  lambda: [s.tolist() for s in m.permute_hidden(state, perm)]]
    else:
        calls.append(lambda: m.permute_hidden(state, perm).tolist())
    out = []
    for call in calls:
        try:
            out.append(("ok", call()))
        except Exception as exc:  # noqa: BLE001 (the messages are compared)
            out.append(("error", str(exc)))
    return out


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_rnn_public_checks_like_torch(mode):
    assert _rnn_calls(ember, mode) == _rnn_calls(torch, mode)


# -- RMSNorm.forward's argument is named x, as in torch -----------------------------------
def test_rms_norm_forward_takes_x_by_keyword_like_torch():
    x = np.random.default_rng(6).standard_normal((2, 4))
    t = torch.nn.RMSNorm(4).double()(x=torch.tensor(x))
    e = nn.RMSNorm(4).double()(x=ember.tensor(x))
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy())
