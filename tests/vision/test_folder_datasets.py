"""ImageFolder and DatasetFolder over real image files in a class-per-folder tree: torchvision's
class order, file order (subfolders included), extensions, loaders, transforms and errors."""

import os

import numpy as np
import pytest

import ember
from ember.data import DataLoader
from ember.vision import transforms
from ember.vision.datasets import (
    DatasetFolder,
    ImageFolder,
    find_classes,
    has_file_allowed_extension,
    is_image_file,
    make_dataset,
)

Image = pytest.importorskip("PIL.Image")
R = np.random.default_rng(0)


def picture(path, size=(6, 5), mode="RGB"):
    """Writes a random image and returns its pixels as a PIL RGB image would hold them."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    pixels = R.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    Image.fromarray(pixels[..., 0] if mode == "L" else pixels, mode).save(path)
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture
def tree(tmp_path):
    """root/{cat,dog,eel}/…: PNG, JPEG (upper-case extension), a nested folder, a grey and an
    RGBA image, and files that are not images."""
    root = tmp_path / "pets"
    made = {
        "dog/b.png": picture(root / "dog/b.png"),
        "dog/a.JPG": picture(root / "dog/a.JPG"),
        "dog/inner/c.bmp": picture(root / "dog/inner/c.bmp", mode="L"),
        "cat/z.png": picture(root / "cat/z.png", mode="RGBA"),
        "eel/x.webp": picture(root / "eel/x.webp", size=(3, 4)),
    }
    (root / "cat/notes.txt").write_text("not an image")
    (root / "README").write_text("a file beside the class folders")
    return root, made


def test_classes_files_and_items_in_torchvisions_order(tree):
    root, made = tree
    ds = ImageFolder(root)
    assert ds.classes == ["cat", "dog", "eel"]
    assert ds.class_to_idx == {"cat": 0, "dog": 1, "eel": 2}
    relative = [(os.path.relpath(p, root), i) for p, i in ds.samples]
    assert relative == [("cat/z.png", 0), ("dog/a.JPG", 1), ("dog/b.png", 1),
                        ("dog/inner/c.bmp", 1), ("eel/x.webp", 2)]
    assert ds.targets == [0, 1, 1, 1, 2] and ds.imgs == ds.samples and len(ds) == 5
    for k, (path, label) in enumerate(relative):
        image, target = ds[k]
        assert image.mode == "RGB" and target == label
        if not path.endswith(".JPG"):  # (JPEG is lossy: compared as read back above)
            np.testing.assert_array_equal(np.asarray(image), made[path])


def test_transforms_and_a_loader_make_batches(tree):
    root, _ = tree
    ds = ImageFolder(root, transform=transforms.Compose([transforms.Resize((4, 4)),
                                                         transforms.ToTensor()]),
                     target_transform=lambda t: t * 10)
    images, labels = next(iter(DataLoader(ds, batch_size=5)))
    assert images.shape == (5, 3, 4, 4) and images.dtype == ember.float32
    assert 0 <= images.min().item() and images.max().item() <= 1
    assert labels.tolist() == [0, 10, 10, 10, 20]


def test_dataset_folder_with_its_own_loader_and_chooser(tmp_path):
    for name, value in [("a/1.npy", 1.0), ("a/2.npy", 2.0), ("b/3.npy", 3.0), ("b/4.txt", 0)]:
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        np.save(path, np.full(2, value)) if name.endswith(".npy") else path.write_text("x")
    ds = DatasetFolder(tmp_path, loader=np.load, extensions=".npy")
    assert [ds[i][0][0] for i in range(len(ds))] == [1.0, 2.0, 3.0] and ds.targets == [0, 0, 1]
    def named(*names):
        return lambda path: os.path.basename(path) in names

    chosen = DatasetFolder(tmp_path, loader=lambda p: p, is_valid_file=named("2.npy", "4.txt"))
    assert [os.path.basename(p) for p, _ in chosen.samples] == ["2.npy", "4.txt"]
    with pytest.raises(FileNotFoundError, match="no file that is_valid_file accepts in the "
                                                "class folder.s. b"):
        DatasetFolder(tmp_path, loader=np.load, is_valid_file=named("1.npy"))
    kept = DatasetFolder(tmp_path, loader=np.load, is_valid_file=named("1.npy"),
                         allow_empty=True)
    assert kept.classes == ["a", "b"] and kept.targets == [0]


def test_subclasses_may_choose_their_classes(tree):
    root, _ = tree

    class OnlyDogs(ImageFolder):
        def find_classes(self, directory):
            return ["dog"], {"dog": 0}

    assert OnlyDogs(root).targets == [0, 0, 0]


def test_the_helpers(tree):
    root, _ = tree
    assert has_file_allowed_extension("x.PnG", ".png") and not is_image_file("x.gif")
    assert find_classes(root) == (["cat", "dog", "eel"], {"cat": 0, "dog": 1, "eel": 2})
    found = make_dataset(root, {"eel": 0, "cat": 1}, extensions=(".webp", ".png"))
    assert [(os.path.relpath(p, root), i) for p, i in found] == [("cat/z.png", 1),
                                                                 ("eel/x.webp", 0)]


def test_bad_trees_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        ImageFolder(tmp_path / "missing")
    (tmp_path / "flat.png").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"no class folder in .*root/<class>/<file>"):
        ImageFolder(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no file with one of \.jpg, \.jpeg, .* in the "
                                                r"class folder\(s\) empty .*allow_empty=True"):
        ImageFolder(tmp_path)
    assert len(ImageFolder(tmp_path, allow_empty=True)) == 0
    with pytest.raises(ValueError, match="give extensions or is_valid_file, not both"):
        make_dataset(tmp_path, {"empty": 0}, extensions=".png", is_valid_file=bool)


def test_repr_names_the_root_and_the_transform(tree):
    root, _ = tree
    text = repr(ImageFolder(root, transform=transforms.ToTensor()))
    assert text.splitlines()[:3] == ["Dataset ImageFolder", "    Number of datapoints: 5",
                                     f"    Root location: {root}"]
    assert "Transform: ToTensor()" in text
