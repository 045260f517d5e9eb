"""The examples' own messages and figures say what they measure (the examples themselves are
run by hand: they train for minutes)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_example_without_data_says_how_to_get_it(tmp_path):
    env = {**os.environ, "EMBER_DATA": str(tmp_path), "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "fashion_mnist_mlp.py")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert "apt-get install dataset-fashion-mnist" in run.stderr
    assert "$EMBER_DATA" in run.stderr


def test_amp_memory_attention_names_all_heads_score_matrices(capsys, monkeypatch):
    from ember.ops import attention
    monkeypatch.setattr(attention, "MEMORY_EFFICIENT_MIN", attention.MEMORY_EFFICIENT_MIN)
    load_example("amp_memory").run_attention(128)   # (it sets MEMORY_EFFICIENT_MIN = 0)
    # 4 heads x 128 x 128 float32 = 0.25 MiB: the figure covers every head, not one
    assert "the 4 heads' T×T score matrices alone are 0.2 MiB" in capsys.readouterr().out


def test_char_gpt_too_little_data_is_refused_by_name(monkeypatch, capsys):
    char_gpt = load_example("char_gpt")
    monkeypatch.setattr(sys, "argv", ["char_gpt.py", "--data-bytes", "100", "--steps", "1"])
    with pytest.raises(SystemExit):  # was NumPy's "ValueError: high <= 0" from the batch draw
        char_gpt.main()
    assert "--data-bytes 100 gives a validation slice" in capsys.readouterr().err


def test_mlp_example_batch_larger_than_the_data_is_refused(monkeypatch, capsys):
    import ember
    mlp = load_example("fashion_mnist_mlp")
    tiny = (ember.zeros(8, 784), ember.zeros(8, dtype=ember.int64))
    monkeypatch.setattr(mlp, "load", lambda split: tiny)
    monkeypatch.setattr(sys, "argv", ["mlp.py", "--batch-size", "16", "--hidden", "4"])
    with pytest.raises(SystemExit):  # was "epoch 1: train loss 0.0000" after no step at all
        mlp.main()
    assert "--batch-size 16 is more than the 8 training images" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["mlp.py", "--batch-size", "4", "--epochs", "1"])
    mlp.main()
    assert "train loss" in (out := capsys.readouterr().out) and "(running mean)" in out


@pytest.mark.parametrize("size", ["0", "-5"])
def test_mlp_example_non_positive_batch_is_refused(monkeypatch, capsys, size):
    mlp = load_example("fashion_mnist_mlp")
    monkeypatch.setattr(mlp, "load", lambda split: pytest.fail("read the data first"))
    monkeypatch.setattr(sys, "argv", ["mlp.py", "--batch-size", size])
    with pytest.raises(SystemExit):  # was ZeroDivisionError (0), no step at all (-5)
        mlp.main()
    assert f"--batch-size must be at least 1, got {size}" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--batch-size", "--block-size", "--sample-every"])
def test_char_gpt_non_positive_sizes_are_refused_by_name(monkeypatch, capsys, flag):
    char_gpt = load_example("char_gpt")
    monkeypatch.setattr(char_gpt, "stdlib_text", lambda n: pytest.fail("read the data first"))
    monkeypatch.setattr(sys, "argv", ["char_gpt.py", flag, "0", "--steps", "1"])
    with pytest.raises(SystemExit):  # was NaN losses (batch), a GPT error (block), a
        char_gpt.main()              # ZeroDivisionError (sample-every)
    assert f"{flag} must be at least 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("flag,value", [("--train-images", "0"), ("--train-images", "-5"),
                                        ("--calibration-batches", "0")])
def test_quantize_example_non_positive_counts_are_refused(monkeypatch, capsys, flag, value):
    quantize = load_example("quantize_fashion_mnist")
    monkeypatch.setattr(quantize, "images", lambda train: pytest.fail("read the data first"))
    monkeypatch.setattr(sys, "argv", ["quantize.py", flag, value])
    with pytest.raises(SystemExit):  # was an untrained or uncalibrated model's accuracy, or
        quantize.main()              # (-5) training on all but the last 5 images
    assert f"{flag} must be at least 1, got {value}" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["--train-size", "-5"], "--train-size must be at least 1, got -5"),
    (["--batch-size", "64"], "--batch-size 64 does not split evenly over 3 ranks")])
def test_ddp_example_bad_sizes_are_refused_by_name(monkeypatch, capsys, argv, message):
    import ember.distributed as dist
    ddp = load_example("ddp_fashion_mnist")
    monkeypatch.setattr(dist, "init_process_group", lambda backend: None)
    monkeypatch.setattr(dist, "get_rank", lambda: 0)
    monkeypatch.setattr(dist, "get_world_size", lambda: 3)
    monkeypatch.setattr(ddp, "tensors", lambda train, limit: pytest.fail("read the data"))
    monkeypatch.setattr(sys, "argv", ["ddp.py", *argv])
    with pytest.raises(SystemExit):  # was an MPI abort (0), training on all but 5 images
        ddp.main()                   # (-5), a global batch of 63, not 64 (3 ranks)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--epochs", "--latent", "--hidden", "--batch-size"])
def test_vae_example_non_positive_sizes_are_refused_by_name(monkeypatch, capsys, flag):
    vae = load_example("vae_fashion_mnist")
    monkeypatch.setattr(vae, "load_images", lambda *a: pytest.fail("read the data first"))
    monkeypatch.setattr(sys, "argv", ["vae.py", flag, "0"])
    with pytest.raises(SystemExit):  # was a model ignoring its input (--latent/--hidden 0),
        vae.main()                   # an untrained plot, a DataLoader traceback
    assert f"{flag} must be at least 1, got 0" in capsys.readouterr().err
