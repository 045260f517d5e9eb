"""The datasets ``ember train`` builds: images normalised as ``(x / 255 - mean) / std``."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import ember
from ember.cli import main
from ember.train.data import FASHION_MNIST_STATS, _as_tensors


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("limit", [None, 5])
def test_normalised_in_place_equals_the_formula_and_leaves_the_source(dtype, limit):
    pixels = np.random.default_rng(0).integers(0, 256, (7, 28, 28)).astype(dtype)
    labels = np.arange(7, dtype=np.uint8)
    source = SimpleNamespace(data=ember.tensor(pixels), targets=ember.tensor(labels))
    x, y = _as_tensors(source, limit, "train_size").tensors
    mean, std = FASHION_MNIST_STATS
    expected = ((torch.from_numpy(pixels[:limit]).float() / 255.0 - mean) / std).unsqueeze(1)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())  # bit for bit
    assert x.dtype == ember.float32 and y.dtype == ember.int64
    np.testing.assert_array_equal(source.data.numpy(), pixels)   # the dataset keeps its pixels


@pytest.mark.parametrize("key", ["train_size", "test_size"])
@pytest.mark.parametrize("given", ["flag", "config"])
def test_a_size_beyond_the_split_is_refused_not_cut(tmp_path, capsys, key, given):
    # it trained on all 60000 (or tested on all 10000) images without a word; a size from a
    # config file was reported as a --train-size flag the user never gave
    flag = "--" + key.replace("_", "-")
    config = tmp_path / "c.toml"
    config.write_text(f'model = "mlp"\n{key} = 70000\n')
    args = [flag, "70000"] if given == "flag" else ["--config", str(config)]
    assert main(["train", "--model", "mlp", *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{key} 70000: the split has only" in err and "images; give at most" in err
    assert f"leave {key} ({flag}) out" in err
