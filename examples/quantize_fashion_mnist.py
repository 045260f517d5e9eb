"""Post-training static quantization of a small Fashion-MNIST CNN, eager mode, as in PyTorch.

Trains the float model briefly, fuses conv+relu and linear+relu, observes activations on a
few calibration batches, converts to int8 weights and uint8 activations (PyTorch's x86/fbgemm
numerics) and compares test accuracy. Run from the repository root:

    apt-get install -y dataset-fashion-mnist     # the data, under /usr/share/datasets
    python examples/quantize_fashion_mnist.py --train-images 20000
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.ao.quantization as tq
import ember.nn.functional as F
from ember import nn
from ember.vision.datasets import FashionMNIST


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.relu1 = nn.Conv2d(1, 16, 3, padding=1), nn.ReLU()
        self.conv2, self.relu2 = nn.Conv2d(16, 32, 3, padding=1), nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc1, self.relu3 = nn.Linear(32 * 7 * 7, 64), nn.ReLU()
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.relu1(self.conv1(x)))
        x = self.pool(self.relu2(self.conv2(x)))
        x = self.relu3(self.fc1(x.flatten(1)))
        return self.dequant(self.fc2(x))


def images(train: bool) -> tuple[ember.Tensor, ember.Tensor]:
    data = FashionMNIST(None, train=train)
    return ((data.data.float() / 255 - 0.2860) / 0.3530).unsqueeze(1), data.targets


def accuracy(model: nn.Module, x: ember.Tensor, y: ember.Tensor, batch: int = 1000) -> float:
    with ember.no_grad():
        hits = sum((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
                   for i in range(0, len(x), batch))
    return 100 * hits / len(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-images", type=int, default=20000)
    parser.add_argument("--calibration-batches", type=int, default=8)
    args = parser.parse_args()
    # (0 gave an untrained or uncalibrated model; a negative --train-images trained on all
    # but that many images)
    for name in ("train_images", "calibration_batches"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, name)}")
    ember.manual_seed(0)
    x, y = images(train=True)
    x, y = x[:args.train_images], y[:args.train_images]
    test_x, test_y = images(train=False)

    model = Net()
    optimizer = ember.optim.AdamW(model.parameters(), lr=2e-3)
    start = time.perf_counter()
    for i in range(0, len(x), 64):
        loss = F.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    float_acc = accuracy(model, test_x, test_y)
    print(f"float model: {float_acc:.2f} % test accuracy ({time.perf_counter() - start:.0f} s "
          "of training)")

    fused = tq.fuse_modules(model, [["conv1", "relu1"], ["conv2", "relu2"], ["fc1", "relu3"]])
    fused.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(fused)
    for i in range(args.calibration_batches):  # calibration: observe activation ranges
        with ember.no_grad():
            prepared(x[i * 128:(i + 1) * 128])
    quantized = tq.convert(prepared)
    start = time.perf_counter()
    int8_acc = accuracy(quantized, test_x, test_y)
    print(f"int8 model:  {int8_acc:.2f} % test accuracy ({time.perf_counter() - start:.1f} s "
          f"for the test set); change {int8_acc - float_acc:+.2f} points")
    print(quantized)


if __name__ == "__main__":
    main()
