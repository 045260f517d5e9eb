"""The VAE example (examples/vae_fashion_mnist.py) against a PyTorch twin: the same initial
weights, batches and reparameterization noise (drawn in NumPy, fed to both) give the same
negative ELBO for 20 Adam steps; and its compiled step gives eager's losses, ``rsample``
included."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import distributions as td
from torch import nn

import ember
from ember.vision.datasets import DatasetNotFoundError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vae_fashion_mnist.py"
spec = importlib.util.spec_from_file_location("vae_fashion_mnist", EXAMPLE)
vae = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vae)

LATENT, HIDDEN, BATCH, STEPS = 8, 64, 16, 20


@pytest.fixture(scope="module")
def images():
    try:
        return vae.load_images(train=True, size=BATCH * STEPS)
    except DatasetNotFoundError:
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")


class TorchVAE(nn.Module):
    def __init__(self, latent, hidden):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(784, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 784))


def torch_negative_elbo(model, x, eps):
    loc, log_scale = model.encoder(x).chunk(2, dim=-1)
    q = td.Normal(loc, log_scale.exp())
    z = q.loc + q.scale * eps
    prior = td.Normal(torch.zeros_like(loc), torch.ones_like(loc))
    likelihood = td.Bernoulli(logits=model.decoder(z), validate_args=False)
    return (td.kl_divergence(q, prior).sum(-1) - likelihood.log_prob(x).sum(-1)).mean()


def twins(dtype):
    ember.manual_seed(0)
    em = vae.build_model(LATENT, HIDDEN).to(getattr(ember, dtype))
    tm = TorchVAE(LATENT, HIDDEN).to(getattr(torch, dtype))
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.from_numpy(em.state_dict()[name].numpy().copy()))
    return em, tm


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_losses_match_pytorch(images, dtype, rtol):
    em, tm = twins(dtype)
    e_opt = ember.optim.Adam(em.parameters(), lr=1e-3)
    t_opt = torch.optim.Adam(tm.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(images))
    pixels = images.numpy().astype(dtype)
    e_losses, t_losses = [], []
    for step in range(STEPS):
        x = np.ascontiguousarray(pixels[order[step * BATCH:(step + 1) * BATCH]])
        eps = rng.standard_normal((BATCH, LATENT)).astype(x.dtype)
        e_losses.append(vae.train_step(em, e_opt, ember.from_numpy(x), ember.from_numpy(eps))
                        .item())
        t_loss = torch_negative_elbo(tm, torch.from_numpy(x), torch.from_numpy(eps))
        t_opt.zero_grad()
        t_loss.backward()
        t_opt.step()
        t_losses.append(t_loss.item())
    np.testing.assert_allclose(e_losses, t_losses, rtol=rtol)
    assert e_losses[-1] < e_losses[0]


def test_compiled_step_matches_eager(images):
    losses = {}
    for compiled in (False, True):
        ember.manual_seed(0)
        model = vae.build_model(LATENT, HIDDEN)
        opt = ember.optim.Adam(model.parameters(), lr=1e-3)
        step = ember.jit.compile(vae.train_step) if compiled else vae.train_step
        ember.manual_seed(1)   # the same rsample noise in both runs
        losses[compiled] = [step(model, opt, images[i * BATCH:(i + 1) * BATCH]).item()
                            for i in range(5)]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-6)
