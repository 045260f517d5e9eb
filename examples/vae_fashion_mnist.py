"""Train a variational autoencoder on Fashion-MNIST with ``ember.distributions``.

An MLP encoder gives a diagonal Gaussian posterior q(z|x); a reparameterized sample
(``rsample``) goes through an MLP decoder whose logits define a Bernoulli likelihood of the
pixels scaled to [0, 1]; the loss is the negative ELBO, ``-log p(x|z) + KL(q(z|x) || p(z))``
with a standard normal prior. Port it back to PyTorch by changing the imports. Run from the
repository root:

    apt-get install -y dataset-fashion-mnist     # the data, under /usr/share/datasets
    python examples/vae_fashion_mnist.py --epochs 5

It prints the test-set ELBO per image (in nats) after every epoch and writes ``vae.png``
(reconstructions of test images, samples from the prior and the ELBO curves) to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
from ember import nn
from ember.distributions import Bernoulli, Normal, kl_divergence
from ember.train.progress import Progress
from ember.utils.data import DataLoader, TensorDataset
from ember.vision.datasets import FashionMNIST

PIXELS = 28 * 28


class VAE(nn.Module):
    """An MLP encoder to a diagonal Gaussian posterior and an MLP decoder to pixel logits."""

    def __init__(self, latent: int = 16, hidden: int = 256) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(PIXELS, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, PIXELS))

    def posterior(self, x: ember.Tensor) -> Normal:
        """q(z|x): one Normal per latent dimension."""
        loc, log_scale = self.encoder(x).chunk(2, dim=-1)
        return Normal(loc, log_scale.exp())

    def likelihood(self, z: ember.Tensor) -> Bernoulli:
        """p(x|z): one Bernoulli per pixel. The pixels are grey levels in [0, 1], not
        binary, so the support check is off; ``log_prob`` is then minus the binary
        cross-entropy, as in PyTorch."""
        return Bernoulli(logits=self.decoder(z), validate_args=False)


def build_model(latent: int = 16, hidden: int = 256) -> VAE:
    """The VAE, initialised from Ember's default generator."""
    return VAE(latent, hidden)


def negative_elbo(model: VAE, x: ember.Tensor, eps: ember.Tensor | None = None) -> ember.Tensor:
    """The negative ELBO per image, averaged over the batch ``x`` of shape (N, 784).

    ``eps`` is the standard normal noise of the reparameterization; without it the posterior
    draws its own with ``rsample``.
    """
    q = model.posterior(x)
    z = q.rsample() if eps is None else q.loc + q.scale * eps
    prior = Normal(ember.zeros_like(q.loc), ember.ones_like(q.scale))
    log_px = model.likelihood(z).log_prob(x).sum(-1)
    kl = kl_divergence(q, prior).sum(-1)
    return (kl - log_px).mean()


def train_step(model: VAE, optimizer: ember.optim.Optimizer, x: ember.Tensor,
               eps: ember.Tensor | None = None) -> ember.Tensor:
    """One Adam step on the negative ELBO of ``x``; returns the loss before the step."""
    loss = negative_elbo(model, x, eps)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def load_images(train: bool, size: int | None = None) -> ember.Tensor:
    """The first ``size`` images (all by default) as rows of 784 pixels in [0, 1]."""
    ds = FashionMNIST("data", train=train)   # also finds the installed package's files
    return ds.data[:size].float().reshape(-1, PIXELS) / 255


def evaluate(model: VAE, images: ember.Tensor, batch_size: int = 1000) -> float:
    """The test-set ELBO per image in nats (one posterior sample per image)."""
    model.eval()
    total = 0.0
    with ember.no_grad():
        for start in range(0, len(images), batch_size):
            x = images[start:start + batch_size]
            total -= negative_elbo(model, x).item() * len(x)
    return total / len(images)


def grid(images: np.ndarray, cols: int) -> np.ndarray:
    """Tiles (N, 784) images into one picture of ``cols`` columns."""
    rows = -(-len(images) // cols)
    tiles = np.ones((rows * cols, 28, 28), dtype=images.dtype)
    tiles[:len(images)] = images.reshape(-1, 28, 28)
    return tiles.reshape(rows, cols, 28, 28).transpose(0, 2, 1, 3).reshape(rows * 28, cols * 28)


def plot(model: VAE, test: ember.Tensor, history: dict[str, list[float]], path: str) -> None:
    """Writes reconstructions of test images, samples from the prior and the ELBO curves."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    model.eval()
    with ember.no_grad():
        x = test[:30]
        recon = model.likelihood(model.posterior(x).mean).probs   # decoder mean at q's mean
        prior_z = ember.randn(60, model.decoder[0].in_features)
        samples = model.likelihood(prior_z).probs
    # rows of 10 test images, each followed by its row of reconstructions
    pairs = np.stack([x.numpy().reshape(3, 10, -1), recon.numpy().reshape(3, 10, -1)], 1)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    panels = [(grid(pairs.reshape(60, -1), 10), "test images and their reconstructions"),
              (grid(samples.numpy(), 10), "samples from the prior (decoder means)")]
    for ax, (picture, title) in zip(axes[:2], panels):
        ax.imshow(picture, cmap="gray_r", vmin=0, vmax=1)
        ax.set_title(title)
        ax.axis("off")
    epochs = range(1, len(history["test"]) + 1)
    axes[2].plot(epochs, history["train"], "o-", label="train")
    axes[2].plot(epochs, history["test"], "o-", label="test")
    axes[2].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[2].set_xlabel("epoch")
    axes[2].set_ylabel("ELBO per image (nats)")
    axes[2].legend()
    axes[2].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--latent", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--train-size", type=int, default=60000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--out", default="runs/vae", help="folder for vae.png")
    parser.add_argument("--compile", action="store_true",
                        help="run each training step as an ember.jit graph")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # (a latent or hidden width of 0 trained a model that ignores its input; --epochs 0 drew
    # the untrained model; --batch-size 0 failed inside the DataLoader)
    for name in ("epochs", "latent", "hidden", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, name)}")
    if args.train_size < args.batch_size:
        parser.error("--train-size must be at least --batch-size (partial batches are dropped)")

    ember.manual_seed(args.seed)
    train, test = load_images(True, args.train_size), load_images(False)
    # drop_last: every step has the same shape, so a compiled step traces once
    loader = DataLoader(TensorDataset(train), batch_size=args.batch_size, shuffle=True,
                        drop_last=True)
    model = build_model(args.latent, args.hidden)
    optimizer = ember.optim.Adam(model.parameters(), lr=args.lr)
    step = ember.jit.compile(train_step) if args.compile else train_step
    print(f"{len(train):,} training images; VAE with "
          f"{sum(p.numel() for p in model.parameters()):,} parameters, latent {args.latent}"
          f"{', compiled step' if args.compile else ''}")

    history: dict[str, list[float]] = {"train": [], "test": []}
    for epoch in range(1, args.epochs + 1):
        model.train()
        start, total = time.perf_counter(), 0.0
        with Progress(len(loader), desc=f"epoch {epoch}") as bar:
            for (x,) in loader:
                loss = step(model, optimizer, x).item()
                total += loss
                bar.update(len(x), loss)
        seconds = time.perf_counter() - start
        history["train"].append(-total / len(loader))
        history["test"].append(evaluate(model, test))
        print(f"epoch {epoch}: train ELBO {history['train'][-1]:.2f}, "
              f"test ELBO {history['test'][-1]:.2f} nats per image, {seconds:.1f} s", flush=True)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "vae.png")
    plot(model, test, history, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
