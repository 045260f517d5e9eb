"""CIFAR-10 and CIFAR-100 from batch files in the python version's format (pickled dicts of a
uint8 (N, 3072) array and label lists, as the archives hold them), written here; a batch that
would run code is refused."""

import os
import pickle

import numpy as np
import pytest

import ember
from ember.data import DataLoader
from ember.vision import transforms
from ember.vision.datasets import CIFAR10, CIFAR100, DatasetNotFoundError
from ember.vision.datasets.cifar import load_batch

R = np.random.default_rng(0)


def write(path, content, as_python2=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if as_python2:  # keys as byte strings, as the archives' cPickle files give them
        content = {k.encode(): v for k, v in content.items()}
    with open(path, "wb") as f:
        pickle.dump(content, f, protocol=2)


def cifar10(root, per_batch=4):
    folder = os.path.join(root, "cifar-10-batches-py")
    made = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = R.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        labels = R.integers(0, 10, per_batch).tolist()
        write(os.path.join(folder, name), {"data": data, "labels": labels,
                                           "batch_label": name}, as_python2=True)
        made[name] = (data, labels)
    write(os.path.join(folder, "batches.meta"), {"label_names": [
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
        "truck"], "num_vis": 3072}, as_python2=True)
    return made


def test_cifar10_reads_the_batches_in_order(tmp_path):
    made = cifar10(tmp_path)
    train = CIFAR10(tmp_path)
    assert len(train) == 20 and train.data.shape == (20, 32, 32, 3)
    assert train.data.dtype == np.uint8
    assert train.targets == sum((made[f"data_batch_{i}"][1] for i in range(1, 6)), [])
    first = made["data_batch_1"][0][0]  # 1024 red, then green, then blue values, row by row
    image, label = train[0]
    np.testing.assert_array_equal(image[..., 0], first[:1024].reshape(32, 32))
    np.testing.assert_array_equal(image[..., 2], first[2048:].reshape(32, 32))
    assert label == made["data_batch_1"][1][0]
    test = CIFAR10(tmp_path, train=False)
    assert len(test) == 4 and test.targets == made["test_batch"][1]
    assert test.classes[3] == "cat" and test.class_to_idx["truck"] == 9
    assert "Split: Test" in repr(test)


def test_cifar10_batches_through_totensor_and_a_loader(tmp_path):
    cifar10(tmp_path)
    data = CIFAR10(tmp_path, transform=transforms.ToTensor(), target_transform=lambda t: -t)
    images, labels = next(iter(DataLoader(data, batch_size=8)))
    assert images.shape == (8, 3, 32, 32) and images.dtype == ember.float32
    np.testing.assert_allclose(images[0].numpy(), data.data[0].transpose(2, 0, 1) / 255,
                               rtol=1e-6)
    assert labels.tolist() == [-t for t in data.targets[:8]]


def test_cifar100_reads_the_fine_labels(tmp_path):
    folder = tmp_path / "cifar-100-python"
    data = R.integers(0, 256, (3, 3072), dtype=np.uint8)
    for name in ("train", "test"):
        write(folder / name, {"data": data, "fine_labels": [5, 0, 99],
                              "coarse_labels": [1, 2, 3]})
    write(folder / "meta", {"fine_label_names": [f"c{i}" for i in range(100)],
                            "coarse_label_names": [f"s{i}" for i in range(20)]})
    train = CIFAR100(tmp_path)
    assert train.targets == [5, 0, 99] and len(train.classes) == 100
    assert train.classes[99] == "c99" and train[2][1] == 99


def test_missing_files_are_named_with_the_fix(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"CIFAR10: dataset not found: no "
                                                   r"data_batch_1, .* Fix: pass download=True"):
        CIFAR10(tmp_path)


def test_a_batch_that_would_run_code_is_refused(tmp_path):
    class Sneaky:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    write(tmp_path / "evil", {"data": Sneaky(), "labels": []})
    with pytest.raises(DatasetNotFoundError, match="is not a CIFAR batch: .*system is not "
                                                   "allowed"):
        load_batch(tmp_path / "evil")
    assert not (tmp_path / "pwned").exists()


def test_a_batch_pickled_with_protocol_5_loads(tmp_path):
    data = R.integers(0, 256, (2, 3072), dtype=np.uint8)
    with open(tmp_path / "b", "wb") as f:
        pickle.dump({"data": data, "labels": [1, 2]}, f, protocol=5)
    np.testing.assert_array_equal(load_batch(tmp_path / "b")["data"], data)


def test_batches_of_another_shape_or_kind_are_named(tmp_path):
    cifar10(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    write(folder / "test_batch", {"data": np.zeros((2, 100), np.uint8), "labels": [0, 1]})
    with pytest.raises(DatasetNotFoundError, match=r"test_batch holds uint8 data of shape "
                                                   r"\(2, 100\); a CIFAR batch holds uint8 "
                                                   r"rows of 3072"):
        CIFAR10(tmp_path, train=False)
    write(folder / "test_batch", {"data": np.zeros((2, 3072), np.uint8), "fine": [0, 1]})
    with pytest.raises(DatasetNotFoundError, match=r"not a CIFAR batch of this kind: it has no "
                                                   r"'labels' \(it has \['data', 'fine'\]\)"):
        CIFAR10(tmp_path, train=False)
