"""``RNNBase._flat_weights`` is written through, as PyTorch's list that the forward reads: an
entry assigned (was silently dropped: the property built a new list each time) or the whole
list replaced (raised 'no setter') sets the weights the forward uses; what cannot take effect
raises (review62 item 3)."""

import numpy as np
import pytest
import torch

import ember


def _pair(seed=0):
    rt = torch.nn.LSTM(3, 4)
    re = ember.nn.LSTM(3, 4)
    re.load_state_dict({k: ember.tensor(v.numpy()) for k, v in rt.state_dict().items()})
    x = np.random.default_rng(seed).standard_normal((5, 2, 3)).astype(np.float32)
    return rt, re, torch.tensor(x), ember.tensor(x)


def test_assigning_an_entry_or_the_whole_list_changes_the_forward_as_torch():
    rt, re, xt, xe = _pair()
    rt._flat_weights[0] = torch.nn.Parameter(torch.zeros(16, 3))
    re._flat_weights[0] = ember.nn.Parameter(ember.zeros(16, 3))
    np.testing.assert_allclose(re(xe)[0].detach().numpy(), rt(xt)[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert float(re._flat_weights[0].abs().sum()) == 0.0
    rt._flat_weights = [torch.nn.Parameter(w.detach() * 2) for w in rt._flat_weights]
    re._flat_weights = [ember.nn.Parameter(w.detach() * 2) for w in re._flat_weights]
    np.testing.assert_allclose(re(xe)[0].detach().numpy(), rt(xt)[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(re.weight_hh_l0.detach().numpy(),
                                  rt._flat_weights[1].detach().numpy())


def test_a_weight_drop_wrapper_writing_computed_tensors_runs_as_torch():
    rt, re, xt, xe = _pair(1)
    for r in (rt, re):
        raw = r._parameters.pop("weight_hh_l0")
        r.register_parameter("weight_hh_l0_raw", raw)
    rt._flat_weights[1] = rt.weight_hh_l0_raw * 0.5
    re._flat_weights[1] = re.weight_hh_l0_raw * 0.5
    out_t, out_e = rt(xt)[0], re(xe)[0]
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    out_t.sum().backward()
    out_e.sum().backward()
    np.testing.assert_allclose(re.weight_hh_l0_raw.grad.numpy(),
                               rt.weight_hh_l0_raw.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_writes_that_cannot_take_effect_raise():
    r = ember.nn.LSTM(3, 4)
    with pytest.raises(TypeError, match="_flat_weights.*Hint"):
        r._flat_weights[0] = ember.zeros(16, 3)  # (torch keeps it aside the parameter)
    with pytest.raises(ember.errors.ShapeError, match="got 1 weights for 4 names"):
        r._flat_weights = [r.weight_ih_l0]
    with pytest.raises(TypeError, match="_flat_weights: adding or removing"):
        r._flat_weights.append(None)
