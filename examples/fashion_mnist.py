"""Train a small CNN on Fashion-MNIST with the usual PyTorch loop.

An ``nn.Module``, a ``DataLoader``, an optimizer, ``loss.backward()`` and
``optimizer.step()``. Port it back to PyTorch by changing the imports. Run from the repository root:

    apt-get install -y dataset-fashion-mnist     # the data, under /usr/share/datasets
    python examples/fashion_mnist.py --epochs 2

(``ember train --model cnn`` does the same with checkpoints, resume and plots.)
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.nn.functional as F
from ember import nn
from ember.utils.data import DataLoader, TensorDataset
from ember.vision.datasets import FashionMNIST


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def tensors(train: bool) -> TensorDataset:
    """The images scaled to [0, 1] and normalised, with a channel dimension, and the labels."""
    ds = FashionMNIST("data", train=train)   # also finds the installed package's files
    x = (ds.data.float() / 255 - 0.2860) / 0.3530
    return TensorDataset(x.unsqueeze(1), ds.targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    ember.manual_seed(0)
    train_loader = DataLoader(tensors(train=True), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(tensors(train=False), batch_size=1000)
    model = Net()
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        for step, (x, y) in enumerate(train_loader):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                rate = (step + 1) * args.batch_size / (time.perf_counter() - start)
                print(f"epoch {epoch} step {step:4d}/{len(train_loader)}  loss {loss.item():.4f}"
                      f"  {rate:,.0f} images/s", flush=True)

        model.eval()
        correct = 0
        with ember.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(dim=1) == y).sum().item()
        print(f"epoch {epoch}: test accuracy {correct / len(test_loader.dataset):.2%}")


if __name__ == "__main__":
    main()
