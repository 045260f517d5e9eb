"""ember.nn.utils.prune against torch.nn.utils.prune: masks, reparametrization, state-dict keys,
iterative pruning, errors, and training a pruned model."""

import math

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import ember
import ember.nn as nn
import ember.nn.utils.prune as prune
from tests.nn.helpers import pair


def same_masks(t_module, e_module, name="weight"):
    np.testing.assert_array_equal(getattr(e_module, name + "_mask").numpy(),
                                  getattr(t_module, name + "_mask").numpy())
    np.testing.assert_allclose(getattr(e_module, name).detach().numpy(),
                               getattr(t_module, name).detach().numpy())


def test_l1_unstructured_reparametrizes_as_torch():
    t, e = pair(torch.nn.Linear, nn.Linear, 5, 4)
    tprune.l1_unstructured(t, "weight", amount=0.3)
    prune.l1_unstructured(e, "weight", amount=0.3)
    same_masks(t, e)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in e.named_parameters()] == ["bias", "weight_orig"]
    assert not isinstance(e.weight, nn.Parameter) and prune.is_pruned(e)
    with ember.no_grad():  # the hook recomputes weight from weight_orig before each call
        e.weight_orig.fill_(2.0)
    e(ember.randn(1, 5, dtype=ember.float64))
    assert set(np.unique(e.weight.detach().numpy())) == {0.0, 2.0}


@pytest.mark.parametrize("n", [1, 2, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_matches_torch(n, dim):
    # ("fro" is a matrix norm: torch refuses it over the three other dims of a conv weight)
    t, e = pair(torch.nn.Linear, nn.Linear, 3, 5) if n == "fro" else \
        pair(torch.nn.Conv2d, nn.Conv2d, 3, 5, 2)
    tprune.ln_structured(t, "weight", amount=2, n=n, dim=dim)
    prune.ln_structured(e, "weight", amount=2, n=n, dim=dim)
    same_masks(t, e)


def test_iterative_pruning_combines_masks_as_torch():
    t, e = pair(torch.nn.Linear, nn.Linear, 6, 5)
    steps = [("l1_unstructured", dict(amount=4)), ("ln_structured", dict(amount=1, n=2, dim=0)),
             ("l1_unstructured", dict(amount=0.25)), ("ln_structured", dict(amount=0.4, n=1,
                                                                            dim=1))]
    for fn, kwargs in steps:
        getattr(tprune, fn)(t, "weight", **kwargs)
        getattr(prune, fn)(e, "weight", **kwargs)
        same_masks(t, e)
    (hook,) = list(e._forward_pre_hooks.values())
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 4
    assert [type(m).__name__ for m in hook] == ["L1Unstructured", "LnStructured",
                                                "L1Unstructured", "LnStructured"]


def test_importance_scores_and_global_pruning_match_torch():
    t1, e1 = pair(torch.nn.Linear, nn.Linear, 4, 3)
    t2, e2 = pair(torch.nn.Linear, nn.Linear, 3, 2)
    scores = np.random.default_rng(1).standard_normal((2, 3))
    tprune.l1_unstructured(t2, "weight", 2, importance_scores=torch.tensor(scores))
    prune.l1_unstructured(e2, "weight", 2, importance_scores=ember.tensor(scores))
    same_masks(t2, e2)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t1, "bias")],
                               pruning_method=tprune.L1Unstructured, amount=0.4,
                               importance_scores={(t1, "bias"): torch.ones(3) * 9})
    prune.global_unstructured([(e1, "weight"), (e2, "weight"), (e1, "bias")],
                              pruning_method=prune.L1Unstructured, amount=0.4,
                              importance_scores={(e1, "bias"): ember.ones(3) * 9})
    for t, e, name in [(t1, e1, "weight"), (t2, e2, "weight"), (t1, e1, "bias")]:
        same_masks(t, e, name)


def test_custom_from_mask_and_remove_match_torch():
    t, e = pair(torch.nn.Linear, nn.Linear, 3, 2)
    mask = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    tprune.custom_from_mask(t, "weight", torch.tensor(mask))
    prune.custom_from_mask(e, "weight", ember.tensor(mask))
    same_masks(t, e)
    orig = e.weight_orig
    prune.remove(e, "weight")
    tprune.remove(t, "weight")
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    assert e.weight is orig and isinstance(e.weight, nn.Parameter)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy())
    assert not e._forward_pre_hooks and not prune.is_pruned(e)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(e, "weight")


def test_random_methods_prune_the_asked_amount():
    m = prune.random_unstructured(nn.Linear(10, 10), "weight", amount=0.35)
    assert int((m.weight_mask == 0).sum()) == 35
    prune.random_unstructured(m, "weight", amount=5)  # five more, among the unpruned
    assert int((m.weight_mask == 0).sum()) == 40
    m = prune.random_structured(nn.Conv2d(2, 6, 3), "weight", amount=0.5, dim=0)
    assert int((m.weight_mask.sum(dim=(1, 2, 3)) == 0).sum()) == 3
    prune.random_structured(m, "weight", amount=1, dim=0)
    assert int((m.weight_mask.sum(dim=(1, 2, 3)) == 0).sum()) == 4
    picks = {tuple(prune.RandomUnstructured(1).compute_mask(ember.ones(4), ember.ones(4))
                   .tolist()) for _ in range(40)}
    assert len(picks) == 4  # every entry can be the one pruned


def test_identity_prune_and_zero_amount():
    m = prune.identity(nn.Linear(3, 2), "weight")
    assert m.weight_mask.tolist() == [[1.0] * 3] * 2
    x = ember.tensor([[3.0, -1.0], [0.5, 2.0]])
    assert prune.LnStructured(0, n=1, dim=0).prune(x).tolist() == x.tolist()
    assert prune.L1Unstructured(0.0).prune(x).tolist() == x.tolist()
    assert prune.L1Unstructured(1.0).prune(x).abs().sum().item() == 0


@pytest.mark.parametrize("amount, error, match", [
    (-1, ValueError, "should either be a float in the range"),
    (1.5, ValueError, "should either be a float in the range"),
    ("a", TypeError, "Invalid type for amount"),
])
def test_amount_validation_like_torch(amount, error, match):
    with pytest.raises(error, match=match):
        tprune.L1Unstructured(amount)
    with pytest.raises(error, match=match):
        prune.L1Unstructured(amount)


def test_errors_like_torch_and_rollback():
    m, t = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        tprune.l1_unstructured(t, "weight", amount=7)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(m, "weight", amount=7)
    # rolled back: the parameter under its own name again (registered last, as torch's)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert not hasattr(m, "weight_orig") and not hasattr(m, "weight_mask")
    with pytest.raises(ValueError, match="Structured pruning can only be applied"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.random_structured(m, "weight", amount=1, dim=2)
    with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(m, "weight", 1, importance_scores=ember.ones(3))
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        prune.PruningContainer([object()])
    a, b = prune.L1Unstructured(1), prune.L1Unstructured(1)
    a._tensor_name, b._tensor_name = "weight", "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on"):
        prune.PruningContainer(a, b)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2)


def test_training_a_pruned_model_matches_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    e = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    e.load_state_dict({k: v.numpy().copy() for k, v in t.state_dict().items()})
    for lib, model in ((tprune, t), (prune, e)):
        lib.l1_unstructured(model[0], "weight", amount=0.5)
        lib.ln_structured(model[2], "weight", amount=1, n=2, dim=0)
    assert list(e.state_dict()) == list(t.state_dict())
    e_opt = ember.optim.SGD(e.parameters(), lr=0.1)  # (torch's side by hand: torch.optim's
    #                                                    first import takes seconds)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
        t_loss = ((t(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        e_loss = ((e(ember.tensor(x)) - ember.tensor(y)) ** 2).mean()
        np.testing.assert_allclose(e_loss.item(), t_loss.item(), rtol=1e-12)
        t.zero_grad()
        e_opt.zero_grad()
        t_loss.backward()
        e_loss.backward()
        np.testing.assert_allclose(e[0].weight_orig.grad.numpy(),
                                   t[0].weight_orig.grad.numpy(), rtol=1e-10, atol=1e-14)
        with torch.no_grad():
            for p in t.parameters():
                p -= 0.1 * p.grad
        e_opt.step()
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(e.state_dict()[k].numpy(), v.numpy(), rtol=1e-10, atol=1e-14)
    prune.remove(e[0], "weight")
    tprune.remove(t[0], "weight")
    np.testing.assert_allclose(e[0].weight.detach().numpy(), t[0].weight.detach().numpy(),
                               rtol=1e-10, atol=1e-14)
