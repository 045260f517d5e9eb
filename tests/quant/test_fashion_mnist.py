"""Post-training static quantization of a briefly trained Fashion-MNIST MLP keeps its test
accuracy within a point (the data from the Debian package, as the other data tests)."""

from pathlib import Path

import pytest

import ember
import ember.ao.quantization as tq
import ember.nn.functional as F
from ember import nn
from ember.vision.datasets import FashionMNIST

DEBIAN = Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not DEBIAN.is_dir(), reason="dataset-fashion-mnist missing")
def test_static_quantization_keeps_accuracy():
    def images(train, n):
        data = FashionMNIST(None, train=train)
        return ((data.data[:n].float() / 255 - 0.2860) / 0.3530).flatten(1), data.targets[:n]

    ember.manual_seed(0)
    x, y = images(True, 6000)
    test_x, test_y = images(False, 3000)
    model = nn.Sequential(tq.QuantStub(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10),
                          tq.DeQuantStub())
    optimizer = ember.optim.Adam(model.parameters(), lr=3e-3)
    for i in range(0, len(x), 100):
        loss = F.cross_entropy(model(x[i:i + 100]), y[i:i + 100])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    fused = tq.fuse_modules(model, ["1", "2"])
    fused.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(fused)
    with ember.no_grad():
        prepared(x[:500])
        quantized = tq.convert(prepared)
        float_acc = (model(test_x).argmax(1) == test_y).float().mean().item()
        int8_acc = (quantized(test_x).argmax(1) == test_y).float().mean().item()
    assert float_acc > 0.75
    assert abs(int8_acc - float_acc) < 0.01, (float_acc, int8_acc)
