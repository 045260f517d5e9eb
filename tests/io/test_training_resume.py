"""A real training checkpoint: model, optimizer and RNG state saved mid-run resume exactly."""

from __future__ import annotations

import numpy as np
import safetensors.torch
import torch

import ember
from ember import nn, optim


def make(seed):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.25), nn.Linear(8, 3))
    return model, optim.AdamW(model.parameters(), lr=1e-2, betas=(0.8, 0.99))


def step(model, opt):
    x = ember.randn(16, 4)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def test_resume_matches_an_uninterrupted_run(tmp_path):
    model, opt = make(0)
    for _ in range(3):
        step(model, opt)
    path = tmp_path / "epoch_003.safetensors"
    ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
                "rng": ember.get_rng_state()}, path)
    expected = [step(model, opt) for _ in range(3)]

    fresh, fresh_opt = make(1)  # different weights and RNG stream until loaded
    ckpt = ember.load(path)
    fresh.load_state_dict(ckpt["model"])
    fresh_opt.load_state_dict(ckpt["optimizer"])
    ember.set_rng_state(ckpt["rng"])
    assert ckpt["epoch"] == 3
    assert fresh_opt.param_groups[0]["betas"] == (0.8, 0.99)
    assert [step(fresh, fresh_opt) for _ in range(3)] == expected
    for a, b in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_model_weights_load_into_torch(tmp_path):
    model, _ = make(0)
    ember.save(model.state_dict(), tmp_path / "model.safetensors")
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.25),
                               torch.nn.Linear(8, 3)).eval()
    twin.load_state_dict(safetensors.torch.load_file(tmp_path / "model.safetensors"))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    model.eval()
    np.testing.assert_allclose(model(ember.from_numpy(x)).detach().numpy(),
                               twin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_weights_load_into_ember(tmp_path):
    torch.manual_seed(0)
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Dropout(0.25),
                               torch.nn.Linear(8, 3)).eval()
    safetensors.torch.save_file(twin.state_dict(), tmp_path / "torch.safetensors")
    model, _ = make(1)
    model.load_state_dict(ember.load(tmp_path / "torch.safetensors"))
    model.eval()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(model(ember.from_numpy(x)).detach().numpy(),
                               twin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
