"""Whole training steps (forward, loss, backward, optimizer step) of models built from newer
features, compiled and eager on identical copies: the same losses, parameters and buffers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D
import ember.nn.functional as F
from ember import jit, nn
from ember.nn.utils import parametrizations
from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def _steps(build, inputs, steps=3, compiled=True):
    """``build()`` -> (model, optimizer or None, loss_fn(model, *inputs)) after seeding; the
    losses of ``steps`` training steps, the final state dict, and the step function that ran."""
    ember.manual_seed(0)
    model, opt, loss_fn = build()

    def step(*args):
        loss = loss_fn(model, *args)
        loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad()
        return loss

    run = jit.compile(step) if compiled else step
    losses = [float(run(*inputs(i))) for i in range(steps)]
    return losses, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}, run


def _check(build, inputs, steps=3, graphs=1):
    eager_losses, eager_state, _ = _steps(build, inputs, steps, compiled=False)
    losses, state, run = _steps(build, inputs, steps)
    assert len(run.entries) == graphs, jit.explain()
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    assert state.keys() == eager_state.keys()
    for key in state:  # (spectral_norm's _u/_v buffers among them)
        np.testing.assert_allclose(state[key], eager_state[key], rtol=1e-6, atol=1e-7,
                                   err_msg=key)
    return losses, run


def _fixed(*tensors):
    return lambda i: tensors


# -- (a) packed sequences --------------------------------------------------------------------
@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("sorted_, batch_first", [(True, False), (False, True)])
def test_rnn_on_a_sequence_packed_inside_the_step(cls, sorted_, batch_first):
    lengths = (5, 3, 2) if sorted_ else (2, 5, 3)

    def build():
        model = nn.ModuleDict({"rnn": cls(3, 4, batch_first=batch_first, bidirectional=True),
                               "head": nn.Linear(8, 1)})
        return model, ember.optim.Adam(model.parameters(), lr=1e-2), loss

    def loss(model, x):
        packed = pack_padded_sequence(x, lengths, batch_first, enforce_sorted=sorted_)
        out, _ = model["rnn"](packed)
        padded, counts = pad_packed_sequence(out, batch_first=batch_first, total_length=6)
        return model["head"](padded).pow(2).sum() / counts.sum()
    _check(build, _fixed(ember.randn(*((3, 5, 3) if batch_first else (5, 3, 3)))))


def test_lengths_given_as_a_tensor_argument_are_refused_with_the_fix():
    rnn = nn.GRU(2, 3)
    fast = jit.compile(lambda x, lengths: rnn(pack_padded_sequence(x, lengths))[1].sum())
    x = ember.randn(4, 2, 2)
    with pytest.raises(jit.TraceError, match=r"tolist\(\).*test_new_features.py:\d+.*"
                                             "Python numbers, not as a tensor"):
        fast(x, ember.tensor([4, 2]))
    assert float(fast(x, (4, 2))) == pytest.approx(float(rnn(pack_padded_sequence(
        x, [4, 2]))[1].sum()), rel=1e-6)
    fast(x, (3, 3))  # a new value: traced again
    assert "argument lengths[0]: 4 -> 3" in jit.explain()[-1]
    static = jit.compile(lambda x, lengths: x.sum(), static_argnums=1)
    with pytest.raises(TypeError, match="static argument lengths is a tensor.*tuple"):
        static(x, ember.tensor([4, 2]))  # (its values would be read at run time, not fixed)


# -- (b) weight_norm and spectral_norm -------------------------------------------------------
@pytest.mark.parametrize("norm", [parametrizations.weight_norm, parametrizations.spectral_norm])
@pytest.mark.parametrize("conv", [False, True])
def test_weight_and_spectral_norm_train_and_update_buffers_as_eager(norm, conv):
    def build():
        model = norm(nn.Conv2d(2, 3, 3) if conv else nn.Linear(4, 3))
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, opt, lambda m, x: m(x).tanh().sum()
    _check(build, _fixed(ember.randn(*((2, 2, 5, 5) if conv else (5, 4)))), steps=4)


def test_spectral_norm_in_eval_traces_again_and_keeps_its_vectors():
    model = parametrizations.spectral_norm(nn.Linear(4, 3))
    fast = jit.compile(lambda x: model(x).sum())
    x = ember.randn(2, 4)
    fast(x)
    model.eval()
    u = model.parametrizations.weight[0]._u.numpy().copy()
    assert float(fast(x)) == pytest.approx(float(model(x).sum()), rel=1e-6)
    np.testing.assert_array_equal(model.parametrizations.weight[0]._u.numpy(), u)
    assert "model.training: True -> False" in jit.explain()[-1]


# -- (c) lazy layers -------------------------------------------------------------------------
@pytest.mark.parametrize("first_call_eager", [False, True])
def test_lazy_layers_compile_before_and_after_their_first_call(first_call_eager):
    x = ember.randn(5, 4)

    def build():
        model = nn.Sequential(nn.LazyLinear(6), nn.ReLU(), nn.LazyLinear(2))
        if first_call_eager:
            model(x)
        return model, ember.optim.Adam(model.parameters(), lr=0.01), \
            lambda m, x: m(x).pow(2).mean()
    _check(build, _fixed(x), graphs=1 if first_call_eager else 2)
    if not first_call_eager:  # (the placeholders' trace, then the materialized layers')
        assert "model.0.in_features: 0 -> 4" in jit.explain()[-1]


# -- (d) embedding bags, a spatial transformer, CTC ------------------------------------------
def test_embedding_bag_with_offsets_that_change_between_calls():
    offsets = [[0, 2, 5], [0, 1, 7], [0, 4, 4]]

    def build():
        model = nn.EmbeddingBag(10, 4, mode="mean")
        return model, ember.optim.SGD(model.parameters(), lr=0.1), \
            lambda m, i, o: m(i, o).pow(2).sum()
    index = ember.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    _check(build, lambda i: (index, ember.tensor(offsets[i])))


@pytest.mark.parametrize("mode, padding", [("bilinear", "zeros"), ("bicubic", "reflection"),
                                           ("nearest", "border")])
def test_spatial_transformer_with_affine_grid_and_grid_sample(mode, padding):
    def build():
        model = nn.ModuleDict({"loc": nn.Linear(2 * 6 * 6, 6), "conv": nn.Conv2d(2, 3, 3)})
        return model, ember.optim.Adam(model.parameters(), lr=0.01), loss

    def loss(model, x):
        theta = model["loc"](x.flatten(1)).view(-1, 2, 3) + ember.eye(2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        x = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)
        return model["conv"](x).pow(2).mean()
    _check(build, _fixed(ember.randn(3, 2, 6, 6)))


@pytest.mark.parametrize("module", [False, True])
def test_ctc_loss_with_lengths_that_change_between_calls(module):
    def build():
        model = nn.Linear(4, 5)
        return model, ember.optim.Adam(model.parameters(), lr=0.01), loss

    def loss(model, x, targets, input_lengths, target_lengths):
        log_probs = model(x).log_softmax(-1)
        if module:
            return nn.CTCLoss(zero_infinity=True)(log_probs, targets, input_lengths,
                                                  target_lengths)
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="sum")
    x, targets = ember.randn(10, 3, 4), ember.tensor([[1, 2, 3, 1], [4, 4, 1, 2], [1, 2, 2, 1]])
    lengths = [([10, 10, 10], [3, 2, 4]), ([9, 7, 3], [1, 4, 2]), ([10, 2, 8], [4, 1, 1])]
    _check(build, lambda i: (x, targets, *map(ember.tensor, lengths[i])))


# -- (e) losses from ember.distributions -----------------------------------------------------
def test_vae_step_with_normal_rsample_and_kl_draws_afresh_each_call():
    def build():
        model = nn.ModuleDict({"enc": nn.Linear(4, 4), "dec": nn.Linear(2, 4)})
        return model, ember.optim.Adam(model.parameters(), lr=0.01), loss

    def loss(model, x):
        mu, log_var = model["enc"](x).chunk(2, -1)
        q = D.Normal(mu, (0.5 * log_var).exp())
        kl = D.kl_divergence(q, D.Normal(ember.zeros_like(mu), ember.ones_like(mu)))
        return F.mse_loss(model["dec"](q.rsample()), x) + kl.sum(-1).mean()
    _check(build, _fixed(ember.randn(6, 4)), steps=4)


def test_reinforce_step_with_categorical_samples_as_eager():
    def build():
        model = nn.Linear(4, 3)
        return model, ember.optim.SGD(model.parameters(), lr=0.0), loss

    def loss(model, states, rewards):
        policy = D.Categorical(logits=model(states))
        actions = policy.sample()
        return -(policy.log_prob(actions) * rewards).mean() - 0.01 * policy.entropy().mean()
    losses, _ = _check(build, _fixed(ember.randn(8, 4), ember.randn(8)), steps=4)
    assert len(set(losses)) == 4  # (lr 0: only fresh draws move the loss)


def test_gamma_beta_dirichlet_poisson_and_binomial_draws_compile_as_eager():
    """Rejection samplers run inside their primitives, so they trace like any draw; the
    gamma-based ones carry implicit-reparameterization gradients through the compiled step."""
    def build():
        model = nn.Linear(3, 4)
        return model, ember.optim.SGD(model.parameters(), lr=0.05), loss

    def loss(model, x):
        p = model(x).exp()
        gamma = D.Gamma(p[:, 0], p[:, 1]).rsample()
        beta = D.Beta(p[:, 1], p[:, 2]).rsample()
        dirichlet = D.Dirichlet(p[:, 1:]).rsample()[:, 0]
        counts = D.Poisson(p[:, 3] * 20).sample() + D.Binomial(40, probs=p[:, 2] / 4).sample()
        return (gamma + beta + dirichlet).mean() + 1e-3 * (counts * p[:, 0]).mean()
    losses, _ = _check(build, _fixed(ember.randn(5, 3) * 0.3), steps=4)
    assert len(set(losses)) == 4


# -- (f) optimizers stepped from hooks -------------------------------------------------------
def _hooked(model, opt_cls):
    opts = {p: opt_cls([p], lr=0.05) for p in model.parameters()}

    def step(p):
        opts[p].step()
        opts[p].zero_grad()
    handles = [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    return opts, handles


@pytest.mark.parametrize("opt_cls", [ember.optim.SGD, ember.optim.Adam, ember.optim.Adafactor])
def test_per_parameter_optimizers_in_backward_with_a_backward_pre_hook(opt_cls):
    def build():
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        _hooked(model, opt_cls)
        model[2].register_full_backward_pre_hook(lambda m, go: (go[0].clamp(-0.1, 0.1),))
        return model, None, lambda m, x, y: F.mse_loss(m(x), y)
    _check(build, _fixed(ember.randn(6, 4), ember.randn(6, 2)), steps=4)


def test_hook_changes_are_explained_by_the_modules_names_and_the_hooks_lines():
    model = nn.Linear(4, 2)
    fast = jit.compile(lambda x: model(x).pow(2).mean().backward())
    x = ember.randn(3, 4)
    fast(x)
    model.zero_grad()
    _, handles = _hooked(model, ember.optim.SGD)
    fast(x)  # the bias is model.bias, also when a hook reaches it through the optimizers first
    assert "hooks of model.bias: [] -> [_hooked.<locals>.step]" in jit.explain()[-1]
    assert "param_groups" not in jit.explain()[-1]
    for h in handles:
        h.remove()
    hooks = [lambda m, go: (go[0] * 2,),  # (both named `<lambda>`)
             lambda m, go: (go[0] * 3,)]
    for hook in hooks:
        handle = model.register_full_backward_pre_hook(hook)
        fast(x)
        handle.remove()
    first, second = (f"[{h.__qualname__} at test_new_features.py:{h.__code__.co_firstlineno}]"
                     for h in hooks)
    assert f"hooks of model: {first} -> {second}" in jit.explain()[-1]
    for _ in range(2):  # the same lambda, made again: new function objects
        handle = model.register_full_backward_pre_hook(lambda m, go: None)
        fast(x)
        handle.remove()
    assert "-> the same, made again (new function objects)" in jit.explain()[-1]
