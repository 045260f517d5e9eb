"""MNIST / Fashion-MNIST: the Debian package's real files, and small IDX files written here
(gzip and raw, corrupted and truncated ones, torchvision's folder layout, downloads from
local file:// mirrors with MD5 checks)."""

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader
from ember.vision import datasets
from ember.vision import transforms as T
from ember.vision.datasets import IDXError, read_idx, write_idx

DEBIAN = Path("/usr/share/datasets/fashion-mnist")
need_debian = pytest.mark.skipif(not DEBIAN.is_dir(), reason="dataset-fashion-mnist missing")


def numpy_idx(path, header):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=header)


@need_debian
def test_fashion_mnist_from_the_debian_package():
    test = datasets.FashionMNIST(root=None, train=False)
    assert len(test) == 10_000 and test.data.shape == (10_000, 28, 28)
    assert test.data.dtype == ember.uint8 and test.targets.dtype == ember.int64
    labels = numpy_idx(DEBIAN / "t10k-labels-idx1-ubyte.gz", 8)
    images = numpy_idx(DEBIAN / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    np.testing.assert_array_equal(test.targets.numpy(), labels)
    np.testing.assert_array_equal(test.data.numpy(), images)
    assert test.targets[:5].tolist() == [9, 2, 1, 1, 6]
    img, label = test[0]
    assert isinstance(img, np.ndarray) and img.shape == (28, 28) and label == 9
    assert test.classes[label] == "Ankle boot" and test.class_to_idx["Bag"] == 8

    train = datasets.FashionMNIST(root=None, train=True, transform=T.ToTensor())
    assert len(train) == 60_000 and train.targets[:3].tolist() == [9, 0, 0]
    assert np.bincount(train.targets.numpy()).tolist() == [6000] * 10
    # the published mean and std of the pixels in [0, 1], from a histogram of the 47M bytes
    # (no float copy of them)
    counts = np.bincount(train.data.numpy().ravel(), minlength=256) / (60_000 * 28 * 28)
    levels = np.arange(256) / 255.0
    mean = counts @ levels
    std = np.sqrt(counts @ (levels - mean) ** 2)
    assert abs(mean - 0.2860) < 1e-3 and abs(std - 0.3530) < 1e-3
    x, y = train[0]
    assert x.shape == (1, 28, 28) and x.dtype == ember.float32 and y == 9
    np.testing.assert_array_equal(x.numpy()[0], train.data.numpy()[0] / np.float32(255))
    xb, yb = next(iter(DataLoader(train, batch_size=32)))
    assert xb.shape == (32, 1, 28, 28) and yb.dtype == ember.int64
    assert yb.tolist() == train.targets[:32].tolist()


def write_split(folder, n=5, gz=True, prefix="t10k"):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 4, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    ext = ".gz" if gz else ""
    write_idx(folder / f"{prefix}-images-idx3-ubyte{ext}", images)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte{ext}", labels)
    return images, labels


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("layout", ["raw", "root"])
def test_small_files_in_torchvision_layout(tmp_path, gz, layout):
    folder = tmp_path / "MNIST" / "raw" if layout == "raw" else tmp_path
    images, labels = write_split(folder, gz=gz)
    ds = datasets.MNIST(tmp_path, train=False, transform=T.ToTensor(),
                        target_transform=lambda y: y + 100)
    assert len(ds) == 5
    np.testing.assert_array_equal(ds.data.numpy(), images)
    x, y = ds[2]
    assert x.shape == (1, 4, 3) and y == labels[2] + 100
    assert "Split: Test" in repr(ds)


def test_ember_data_environment_variable(tmp_path, monkeypatch):
    images, _ = write_split(tmp_path / "FashionMNIST" / "raw", prefix="train")
    monkeypatch.setenv("EMBER_DATA", str(tmp_path))
    np.testing.assert_array_equal(datasets.FashionMNIST(None).data.numpy(), images)


def test_idx_reader_round_trip_and_errors(tmp_path):
    for dtype in (np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64):
        a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
        write_idx(tmp_path / "a.gz", a)
        back = read_idx(tmp_path / "a.gz")
        assert back.dtype == dtype
        np.testing.assert_array_equal(back, a)
    write_idx(tmp_path / "good", np.zeros((4, 5), np.uint8))
    raw = (tmp_path / "good").read_bytes()
    cases = {
        "truncated": (raw[:-3], r"truncated: shape \(4, 5\) of uint8 needs 20 bytes of data, "
                                r"the file holds 17"),
        "trailing": (raw + b"x", "trailing bytes"),
        "magic": (b"\x01\x02" + raw[2:], "not an IDX file"),
        "empty": (b"", "not an IDX file"),
        "header": (raw[:6], "truncated header"),
    }
    for name, (data, match) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(IDXError, match=match):
            read_idx(tmp_path / name)
    gz = gzip.compress(raw)
    (tmp_path / "cut.gz").write_bytes(gz[: len(gz) // 2])
    with pytest.raises(IDXError, match="gzip stream is corrupted or truncated"):
        read_idx(tmp_path / "cut.gz")
    (tmp_path / "bad.gz").write_bytes(gz[:12] + b"\xff" * 8 + gz[20:])
    with pytest.raises(IDXError, match="cut.gz|bad.gz"):
        read_idx(tmp_path / "bad.gz")
    # a truncated file found by a dataset is reported, not read as garbage
    folder = tmp_path / "root" / "MNIST" / "raw"
    write_split(folder, gz=False)
    path = folder / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(IDXError, match="t10k-images-idx3-ubyte: truncated"):
        datasets.MNIST(tmp_path / "root", train=False)


def test_not_found_message_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_DATA", raising=False)
    with pytest.raises(datasets.DatasetNotFoundError) as info:
        datasets.MNIST(tmp_path, train=True)
    msg = str(info.value)
    assert "apt-get install dataset-mnist" in msg and "download=True" in msg
    assert str(tmp_path / "MNIST" / "raw") in msg
    with pytest.raises(RuntimeError):  # torchvision users catch RuntimeError
        datasets.MNIST(tmp_path)


def mirror_dataset(tmp_path):
    """An MNIST whose mirrors are file:// folders: one broken, one good."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    resources = []
    for split in ("train", "t10k"):
        write_split(good, prefix=split)
    bad.mkdir()
    for path in sorted(good.iterdir()):
        (bad / path.name).write_bytes(b"not the file")
        resources.append((path.name, hashlib.md5(path.read_bytes()).hexdigest()))

    class LocalMNIST(datasets.MNIST):
        pass
    LocalMNIST.__name__ = "MNIST"
    LocalMNIST.resources = resources
    LocalMNIST.mirrors = [bad.as_uri() + "/", good.as_uri() + "/"]
    return LocalMNIST


def test_download_checks_md5_and_falls_back_to_the_next_mirror(tmp_path):
    LocalMNIST = mirror_dataset(tmp_path)
    root = tmp_path / "data"
    ds = LocalMNIST(root, train=True, download=True)
    assert len(ds) == 5
    assert sorted(p.name for p in (root / "MNIST" / "raw").iterdir()) == \
        sorted(name for name, _ in LocalMNIST.resources)
    # every mirror wrong: a clear error listing each one, no partial file left
    LocalMNIST.mirrors = LocalMNIST.mirrors[:1] + [(tmp_path / "nowhere").as_uri() + "/"]
    with pytest.raises(RuntimeError, match=r"MD5 mismatch \(expected [0-9a-f]{32}, got") as info:
        LocalMNIST(tmp_path / "other", download=True)
    assert "nowhere" in str(info.value)
    assert not list((tmp_path / "other").rglob("*.part"))


@need_debian
def test_doc_examples():
    import doctest

    from ember.vision.datasets import idx, mnist
    for mod in (idx, mnist):
        result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, mod.__name__


def test_items_are_copies_so_in_place_transforms_keep_the_data(tmp_path):
    images, _ = write_split(tmp_path)
    ds = datasets.MNIST(tmp_path, train=False)
    img, _ = ds[0]
    img[...] = 0  # e.g. a transform working in place
    np.testing.assert_array_equal(ds[0][0], images[0])
    np.testing.assert_array_equal(ds.data.numpy(), images)


def test_write_idx_takes_big_endian_arrays(tmp_path):
    a = np.arange(6, dtype=">i4").reshape(2, 3)
    write_idx(tmp_path / "a.idx", a)
    back = read_idx(tmp_path / "a.idx")
    assert back.dtype == np.int32 and back.tolist() == a.tolist()


def test_vision_dataset_takes_torchvisions_joint_transforms():
    # torchvision's VisionDataset(root, transforms=None, transform=None, target_transform=None):
    # a subclass passes a joint transforms(sample, target), as detection datasets do
    from ember.vision.datasets.vision import StandardTransform, VisionDataset

    class Pairs(VisionDataset):
        def __init__(self, *args, **kwargs):
            super().__init__(None, *args, **kwargs)

        def __getitem__(self, i):
            return self.transformed(np.full((2, 2), i), i)

        def __len__(self):
            return 3

    joint = Pairs(transforms=lambda img, t: (img + t, t * 10))
    img, target = joint[2]
    assert img[0, 0] == 4 and target == 20
    assert joint.transform is None and joint.target_transform is None
    assert Pairs(lambda img, t: (img, -t))[1][1] == -1  # the second positional is transforms
    split = Pairs(transform=lambda x: x * 2, target_transform=str)
    assert isinstance(split.transforms, StandardTransform)
    assert split.transforms(np.ones(1), 1)[1] == "1" and split[1][1] == "1"
    assert "Target transform" in repr(split)
    assert Pairs().transforms is None and Pairs()[1][1] == 1
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        Pairs(transforms=lambda a, b: (a, b), transform=str)
    # a transform set after construction still applies, as in torchvision's MNIST
    ds = datasets.FashionMNIST(None, train=False)
    ds.transform = lambda x: x.shape
    assert ds[0][0] == (28, 28)


def test_vision_dataset_items_build_no_standard_transform(monkeypatch):
    # 8a9cac3f made transformed() build a StandardTransform for every item (~1 us a sample on
    # FashionMNIST, about doubling __getitem__); the transforms are applied in place
    from ember.vision.datasets import vision

    ds = datasets.FashionMNIST(None, train=False, transform=lambda x: x.shape,
                               target_transform=str)
    plain = datasets.FashionMNIST(None, train=False)
    built = []
    monkeypatch.setattr(vision.StandardTransform, "__init__",
                        lambda self, *a: built.append(a))
    assert ds[0] == ((28, 28), "9") and plain[0][1] == 9
    ds.target_transform = None                      # set after construction: still read
    assert ds[1][1] == 2 and not built


def test_vision_dataset_root_defaults_to_none_as_torchvision():
    # torchvision's VisionDataset(root=None, ...): its own subclasses (FakeData) call
    # super().__init__(transform=..., target_transform=...) without a root
    from ember.vision.datasets.vision import VisionDataset

    class Fake(VisionDataset):
        def __init__(self, transform=None, target_transform=None):
            super().__init__(transform=transform, target_transform=target_transform)

        def __getitem__(self, i):
            return self.transformed(i, i)

        def __len__(self):
            return 2

    fake = Fake(transform=str, target_transform=lambda t: -t)
    assert fake.root is None and fake[1] == ("1", -1)


def test_mnist_keeps_torchvisions_old_names(tmp_path):
    """train_labels / test_labels / train_data / test_data (torchvision warns "... has been
    renamed targets" and returns targets / data), processed_folder, training_file and
    test_file: old tutorials read them; Ember had none (AttributeError)."""
    write_split(tmp_path / "MNIST" / "raw")
    ds = datasets.MNIST(tmp_path, train=False)
    for old, new in (("train_labels", "targets"), ("test_labels", "targets"),
                     ("train_data", "data"), ("test_data", "data")):
        with pytest.warns(UserWarning, match=f"{old} has been renamed {new}"):
            assert getattr(ds, old) is getattr(ds, new)
    assert ds.processed_folder == tmp_path / "MNIST" / "processed"
    assert (ds.training_file, ds.test_file) == ("training.pt", "test.pt")


def test_repr_is_torchvisions_text(tmp_path):
    """torchvision 0.28's repr of the same dataset (printed by it): the joint transform's text
    after the split, its later lines at the margin; no root line without a root. Ember's
    indented the transforms its own way and printed "Root location: None"."""
    write_split(tmp_path / "MNIST" / "raw")
    ds = datasets.MNIST(tmp_path, train=False, target_transform=T.Lambda(lambda y: y),
                        transform=T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,))]))
    assert repr(ds) == "\n".join([
        "Dataset MNIST", "    Number of datapoints: 5", f"    Root location: {tmp_path}",
        "    Split: Test", "    StandardTransform", "Transform: Compose(",
        "               ToTensor()", "               Normalize(mean=(0.5,), std=(0.5,))",
        "           )", "Target transform: Lambda()"])
    if DEBIAN.is_dir():
        assert "Root location" not in repr(datasets.FashionMNIST(None, train=False))
