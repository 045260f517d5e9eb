"""Models on the meta device: built with no memory, trained for shapes (meta gradients),
then materialized with ``to_empty`` and filled by ``load_state_dict(assign=True)``."""

import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.models.gpt import gpt
from ember.vision.models import resnet18


def test_factory_kwargs_and_device_context_build_on_meta():
    assert nn.Linear(4, 5, device="meta").weight.is_meta
    with ember.device("meta"):
        m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.Linear(8, 2))
    assert all(t.is_meta for t in m.state_dict().values())
    assert isinstance(m[0].weight, nn.Parameter) and m[0].weight.requires_grad
    assert str(m) == str(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(),
                                       nn.Linear(8, 2)))


def test_init_functions_are_no_ops_and_draw_nothing():
    w = ember.empty(3, 4, device="meta")
    ember.manual_seed(0)
    for init in (nn.init.kaiming_uniform_, nn.init.normal_, nn.init.zeros_, nn.init.orthogonal_,
                 nn.init.trunc_normal_, nn.init.xavier_normal_):
        assert init(w) is w
    drawn = ember.rand(2).numpy()
    ember.manual_seed(0)
    assert np.array_equal(ember.rand(2).numpy(), drawn)


def test_a_huge_model_builds_in_no_memory():
    tracemalloc.start()
    with ember.device("meta"):
        m = nn.Sequential(*(nn.Linear(1 << 15, 1 << 15) for _ in range(8)))  # 32 GiB on cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sum(p.numel() for p in m.parameters()) > 8 << 30
    assert peak < 1 << 20


def test_backward_gives_meta_grads_of_the_parameters_shapes():
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)).to("meta")
    x = ember.randn(5, 4, device="meta")
    loss = F.cross_entropy(m(x), ember.zeros(5, dtype=ember.int64, device="meta"))
    loss.backward()
    for p in m.parameters():
        assert p.grad.is_meta and p.grad.shape == p.shape and p.grad.dtype is p.dtype
    opt = ember.optim.AdamW(m.parameters())
    opt.step()  # no values to update: the state is made, on meta
    opt.zero_grad()
    assert opt.state[m[0].weight]["exp_avg"].is_meta and m[0].weight.grad is None


def test_autograd_through_views_in_place_and_higher_order():
    x = ember.randn(3, 4, device="meta", requires_grad=True)
    y = x * 1
    y[0].mul_(2)
    y.t().exp().sum().backward()
    assert x.grad.is_meta and x.grad.shape == (3, 4)
    g, = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    assert x.grad.is_meta
    assert ember.func.grad(lambda v: (v * v).sum())(ember.randn(3, device="meta")).is_meta
    assert ember.func.vmap(lambda v: v.sum())(ember.randn(3, 4, device="meta")).shape == (3,)


def test_to_empty_materializes_and_reset_parameters_fills():
    with ember.device("meta"):
        m = nn.Linear(3, 2)
    ref = torch.nn.Linear(3, 2, device="meta").to_empty(device="cpu")
    assert m.to_empty(device="cpu") is m and not m.weight.is_meta
    assert m.weight.shape == tuple(ref.weight.shape) and isinstance(m.weight, nn.Parameter)
    m.reset_parameters()
    assert float(m.weight.abs().max()) <= 3 ** -0.5
    inner = nn.Sequential(nn.Linear(2, 2, device="meta"))
    inner.to_empty(device="cpu", recurse=False)
    assert inner[0].weight.is_meta  # (only this module's own tensors: it has none)


def _same_outputs(build, x, make_input):
    ember.manual_seed(0)
    ref = build().eval()
    with ember.device("meta"):
        m = build().eval()
    assert all(t.is_meta for t in m.state_dict().values())
    shapes = m(make_input("meta"))
    m.to_empty(device="cpu")
    m.load_state_dict(ref.state_dict(), assign=True)
    m.eval()
    out, want = m(x), ref(x)
    assert shapes.shape == want.shape
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())


def test_gpt_built_on_meta_matches_a_normal_build():
    tokens = ember.randint(0, 64, (2, 16))
    _same_outputs(lambda: gpt(vocab_size=64, block_size=16, n_layer=2, n_head=2, d_model=32),
                  tokens, lambda dev: ember.zeros(2, 16, dtype=ember.int64, device=dev))


def test_resnet_built_on_meta_matches_a_normal_build():
    x = ember.randn(1, 3, 32, 32)
    _same_outputs(resnet18, x, lambda dev: ember.empty(1, 3, 32, 32, device=dev))


def test_load_state_dict_without_assign_keeps_meta():
    m = nn.Linear(4, 2, device="meta")
    m.load_state_dict(nn.Linear(4, 2).state_dict())  # (torch: a no-op copy into meta)
    assert m.weight.is_meta


def test_skip_init_builds_on_meta_then_gives_memory():
    ember.manual_seed(0)
    m = nn.utils.skip_init(nn.BatchNorm1d, 3)
    assert not m.weight.is_meta and m.running_mean.device.type == "cpu"
    drawn = ember.rand(2).numpy()
    ember.manual_seed(0)
    assert np.array_equal(ember.rand(2).numpy(), drawn)


def test_loading_without_assign_across_meta_as_torch():
    for lib in (ember.nn, torch.nn):
        target = lib.Linear(3, 2, device="meta")
        with pytest.warns(UserWarning, match="for weight: copying from a non-meta parameter "
                          "in the checkpoint to a meta parameter in the current model, which "
                          "is a no-op"):
            target.load_state_dict(lib.Linear(3, 2).state_dict())
        assert target.weight.is_meta
        with pytest.raises(RuntimeError, match='While copying the parameter named "weight"'):
            lib.Linear(3, 2).load_state_dict(lib.Linear(3, 2, device="meta").state_dict())
