"""stack_module_state and replace_all_batch_norm_modules_ for model ensembling, as in torch's
tutorial: vmap over functional_call equals looping over the models (outputs and gradients), and
agrees with torch.func on the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.func import functional_call, replace_all_batch_norm_modules_, stack_module_state, vmap


def mlps(n, batch_norm=False):
    ember.manual_seed(0)
    layers = lambda: [nn.Linear(4, 6), *([nn.BatchNorm1d(6)] if batch_norm else []),  # noqa: E731
                      nn.ReLU(), nn.Linear(6, 2)]
    return [nn.Sequential(*layers()).double() for _ in range(n)]


def torch_twin(model):
    layers = [torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2)]
    if any(isinstance(m, nn.BatchNorm1d) for m in model.modules()):
        layers.insert(1, torch.nn.BatchNorm1d(6))
    twin = torch.nn.Sequential(*layers).double()
    twin.load_state_dict({k: torch.tensor(v.detach().numpy())
                          for k, v in model.state_dict().items()})
    return twin


def ensemble(models, in_dims):
    params, buffers = stack_module_state(models)
    call = lambda p, b, x: functional_call(models[0], (p, b), (x,))  # noqa: E731
    return params, buffers, vmap(call, in_dims=(0, 0, in_dims))


def test_stacks_like_torch():
    models = mlps(3, batch_norm=True)
    params, buffers = stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state([torch_twin(m) for m in models])
    for ours, theirs in ((params, tparams), (buffers, tbuffers)):
        assert list(ours) == list(theirs)
        for name, t in theirs.items():
            assert ours[name].requires_grad == t.requires_grad and ours[name].is_leaf
            assert ours[name].dtype.name == str(t.dtype).removeprefix("torch.")
            np.testing.assert_array_equal(ours[name].detach().numpy(), t.detach().numpy())
    with ember.no_grad():
        params["0.weight"][1] += 1.0  # a copy: the models keep their weights
    assert not np.array_equal(params["0.weight"][1].detach().numpy(),
                              models[1][0].weight.detach().numpy())


@pytest.mark.parametrize("shared_batch", [True, False])
def test_vmapped_ensemble_equals_the_loop(shared_batch):
    models = mlps(4)
    x = ember.randn(*((5, 4) if shared_batch else (4, 5, 4)), dtype=ember.float64)
    params, _, run = ensemble(models, None if shared_batch else 0)
    out = run(params, {}, x)
    loop = ember.stack([m(x if shared_batch else x[i]) for i, m in enumerate(models)])
    np.testing.assert_allclose(out.detach().numpy(), loop.detach().numpy(), rtol=1e-12)
    out.pow(2).sum().backward()
    loop.pow(2).sum().backward()
    for name, stacked in params.items():
        per_model = ember.stack([dict(m.named_parameters())[name].grad for m in models])
        np.testing.assert_allclose(stacked.grad.numpy(), per_model.numpy(), rtol=1e-12)


def test_vmapped_ensemble_agrees_with_torch_func():
    models = mlps(3)
    x = np.random.default_rng(0).standard_normal((3, 5, 4))
    params, buffers, run = ensemble(models, 0)
    twins = [torch_twin(m) for m in models]
    tparams, tbuffers = torch.func.stack_module_state(twins)
    base = twins[0]
    tout = torch.func.vmap(lambda p, b, xi: torch.func.functional_call(base, (p, b), (xi,)))(
        tparams, tbuffers, torch.tensor(x))
    np.testing.assert_allclose(run(params, buffers, ember.tensor(x)).detach().numpy(),
                               tout.detach().numpy(), rtol=1e-12)


def test_an_optimizer_trains_the_stacked_ensemble():
    models = mlps(3)
    params, buffers, run = ensemble(models, None)
    opt = ember.optim.SGD(params.values(), lr=0.1)
    x = ember.randn(8, 4, dtype=ember.float64)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = run(params, buffers, x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[2] < losses[0]


def test_batch_norm_ensemble_after_replacing_running_stats():
    models = [replace_all_batch_norm_modules_(m) for m in mlps(3, batch_norm=True)]
    bn = models[0][1]
    assert bn.running_mean is None and bn.num_batches_tracked is None
    assert not bn.track_running_stats
    params, buffers, run = ensemble(models, 0)
    assert buffers == {}
    x = np.random.default_rng(1).standard_normal((3, 7, 4))
    out = run(params, buffers, ember.tensor(x))
    loop = ember.stack([m(ember.tensor(x[i])) for i, m in enumerate(models)])
    np.testing.assert_allclose(out.detach().numpy(), loop.detach().numpy(), rtol=1e-12)
    twins = [torch.func.replace_all_batch_norm_modules_(torch_twin(m)) for m in mlps(3, True)]
    theirs = torch.stack([t(torch.tensor(x[i])) for i, t in enumerate(twins)])
    np.testing.assert_allclose(out.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    models[0].eval()  # without running statistics eval mode normalizes by the batch too
    np.testing.assert_allclose(models[0](ember.tensor(x[0])).detach().numpy(),
                               loop[0].detach().numpy(), rtol=1e-12)


def test_replace_includes_the_root_and_returns_it():
    bn = nn.BatchNorm2d(3)
    assert replace_all_batch_norm_modules_(bn) is bn and bn.running_var is None


@pytest.mark.parametrize(("models", "match"), [
    (lambda: [], "Expected at least one model, got 0"),
    (lambda: [nn.Linear(2, 2), nn.Linear(2, 2).eval()], "same training/eval mode"),
    (lambda: [nn.Linear(2, 2), nn.Bilinear(2, 2, 2)], "same class"),
    (lambda: [nn.Linear(2, 2), nn.Linear(2, 2).requires_grad_(False)],
     "weight from each model to have the same .requires_grad"),
])
def test_bad_ensembles_raise_like_torch(models, match):
    with pytest.raises(RuntimeError, match=match):
        stack_module_state(models())
