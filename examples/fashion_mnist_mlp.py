"""Train a two-layer MLP on Fashion-MNIST with nothing but Ember tensors and autograd.

No nn.Module, no optimizer class: parameters are tensors with requires_grad, the update is
plain SGD with momentum written out. Run from the repository root:

    apt-get install -y dataset-fashion-mnist     # the data, under /usr/share/datasets
    python examples/fashion_mnist_mlp.py --epochs 2
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time

import numpy as np

import ember
import ember.nn.functional as F

DATA = os.environ.get("EMBER_DATA", "/usr/share/datasets/fashion-mnist")


def read_idx(path: str) -> np.ndarray:
    """Reads an IDX file (the MNIST format), gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(split: str) -> tuple[ember.Tensor, ember.Tensor]:
    prefix = "train" if split == "train" else "t10k"
    paths = [os.path.join(DATA, f"{prefix}-{kind}-ubyte.gz")
             for kind in ("images-idx3", "labels-idx1")]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        sys.exit(f"Fashion-MNIST not found: no {', '.join(missing)}.\n"
                 f"Fix: `apt-get install dataset-fashion-mnist`, or set $EMBER_DATA to the "
                 f"folder holding the four .gz files.")
    images, labels = (read_idx(p) for p in paths)
    x = (images.reshape(len(images), -1).astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return ember.from_numpy(x), ember.from_numpy(labels.astype(np.int64))


def init_params(hidden: int) -> list[ember.Tensor]:
    def layer(n_in: int, n_out: int) -> list[ember.Tensor]:
        bound = 1 / n_in ** 0.5
        w = (ember.rand(n_in, n_out) * 2 - 1) * bound
        b = (ember.rand(n_out) * 2 - 1) * bound
        return [w.requires_grad_(), b.requires_grad_()]
    return layer(784, hidden) + layer(hidden, 10)


def model(params: list[ember.Tensor], x: ember.Tensor) -> ember.Tensor:
    w1, b1, w2, b2 = params
    return F.relu(x @ w1 + b1) @ w2 + b2


def accuracy(params: list[ember.Tensor], x: ember.Tensor, y: ember.Tensor) -> float:
    with ember.no_grad():
        return (model(params, x).argmax(dim=1) == y).float().mean().item()


def progress(step: int, total: int, loss: float, rate: float) -> None:
    done = int(30 * step / total)
    sys.stdout.write(f"\r  [{'#' * done}{'.' * (30 - done)}] {step}/{total} "
                     f"loss {loss:.4f}  {rate:,.0f} samples/s")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if args.batch_size < 1:  # (0 divided by zero below; a negative size trained nothing)
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")
    ember.manual_seed(args.seed)
    x_train, y_train = load("train")
    x_test, y_test = load("test")
    params = init_params(args.hidden)
    velocity = [ember.zeros_like(p) for p in params]
    steps = len(x_train) // args.batch_size
    if steps == 0:
        parser.error(f"--batch-size {args.batch_size} is more than the {len(x_train)} training "
                     f"images (partial batches are dropped)")
    print(f"Fashion-MNIST: {len(x_train)} training images, {len(x_test)} test images")
    for epoch in range(1, args.epochs + 1):
        order = ember.randperm(len(x_train))
        start, running = time.perf_counter(), 0.0
        for step in range(steps):
            idx = order[step * args.batch_size:(step + 1) * args.batch_size]
            loss = F.cross_entropy(model(params, x_train[idx]), y_train[idx])
            for p in params:
                p.grad = None
            loss.backward()
            with ember.no_grad():
                for p, v in zip(params, velocity):
                    v.mul_(0.9).add_(p.grad)
                    p.sub_(v * args.lr)
            running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
            if step % 20 == 0 or step == steps - 1:
                rate = (step + 1) * args.batch_size / (time.perf_counter() - start)
                progress(step + 1, steps, running, rate)
        print(f"\nepoch {epoch}: train loss {running:.4f} (running mean), "
              f"test accuracy {accuracy(params, x_test, y_test):.2%}")


if __name__ == "__main__":
    main()
