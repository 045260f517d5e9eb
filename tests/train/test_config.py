"""Options of ``ember train``: model defaults, TOML files, flags over files, clear errors."""

import json

import pytest

from ember.cli import main
from ember.train import ConfigError, TrainConfig, make_config
from ember.train.config import MODEL_DEFAULTS


def test_defaults_come_from_the_model():
    cfg = make_config({"model": "mlp"})
    assert (cfg.optimizer, cfg.lr, cfg.batch_size) == tuple(
        MODEL_DEFAULTS["mlp"][k] for k in ("optimizer", "lr", "batch_size"))
    assert cfg.out == "runs/mlp" and cfg.epochs == 5 and cfg.seed == 0


def test_momentum_is_sgds_with_its_default():
    assert make_config({"model": "resnet18"}).momentum == 0.9
    assert make_config({"model": "cnn", "optimizer": "sgd", "momentum": 0.0}).momentum == 0.0
    assert make_config({"model": "cnn"}).momentum is None  # (adamw: not silently ignored)


def test_resuming_an_adamw_run_saved_with_momentum_09_does_not_warn(recwarn):
    from ember.train.loop import _check_resumable

    cfg = make_config({"model": "cnn"})
    _check_resumable("old.safetensors", {**cfg.to_dict(), "momentum": 0.9}, cfg)
    assert not recwarn.list  # (checkpoints written before momentum was sgd's alone)
    sgd = make_config({"model": "cnn", "optimizer": "sgd"})
    with pytest.warns(UserWarning, match="momentum 0.5 -> 0.9"):
        _check_resumable("old.safetensors", {**sgd.to_dict(), "momentum": 0.5}, sgd)


def test_toml_file_and_flags_override_it(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('model = "cnn"\nepochs = 3\nbatch-size = 32\nlr = 0.01\n'
                    '[train]\noptimizer = "sgd"\n')
    cfg = make_config({"epochs": 7, "lr": None}, str(path))
    assert (cfg.model, cfg.epochs, cfg.batch_size, cfg.lr, cfg.optimizer) == (
        "cnn", 7, 32, 0.01, "sgd")


@pytest.mark.parametrize("flags, match", [
    ({"model": "vgg"}, "unknown model 'vgg'"),
    ({"optimizer": "lbfgs"}, "unknown optimizer 'lbfgs'"),
    ({"epochs": 0}, "epochs must be at least 1"),
    ({"lr": -1.0}, "lr must be positive"),
    ({"dataset": "imagenet"}, "unknown dataset"),
    ({"epochs": "5"}, "option epochs must be an integer, got '5'"),
    ({"lr": "1e-3"}, "option lr must be a number"),
    ({"resume": "false"}, "option resume must be true or false"),
    ({"epochs": True}, "option epochs must be an integer"),
    ({"data_dir": 5}, "option data_dir must be a string"),
    ({"train_size": 0}, "train_size must be at least 1"),
    ({"test_size": -5}, "test_size must be at least 1"),
    ({"lr": float("nan")}, "lr must be positive and finite"),
    ({"weight_decay": -0.1}, "weight_decay must be non-negative"),
    ({"num_workers": -1}, "num_workers must be non-negative"),
    ({"out": "runs/{name}"}, "the only placeholder allowed is {model}"),
    ({"seed": 2**64}, r"seed must be a 64-bit integer \(in \[-2\*\*63, 2\*\*64\)\), got"),
    ({"seed": -2**63 - 1}, "seed must be a 64-bit integer"),
    ({"resume": True, "overwrite": True}, "resume and overwrite exclude each other"),
    ({"model": "cnn", "momentum": 0.5}, "momentum is SGD's; adamw has none"),
    ({"optimizer": "adam", "momentum": 0.9}, "leave --momentum out, or train with --optimizer sgd"),
    ({"optimizer": "sgd", "momentum": -0.5}, "momentum must be non-negative"),
])
def test_bad_values_are_named(flags, match):
    with pytest.raises(ConfigError, match=match):
        make_config(flags)


def test_bad_files_are_named(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        make_config({}, str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("epochs = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        make_config({}, str(bad))
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("epoch = 3")
    with pytest.raises(ConfigError, match="unknown option 'epoch'"):
        make_config({}, str(unknown))
    wrong_type = tmp_path / "type.toml"
    wrong_type.write_text("epochs = 2.5")
    with pytest.raises(ConfigError, match="epochs must be an integer"):
        make_config({}, str(wrong_type))
    wrong_type.write_text('progress = "false"')  # a string, not TOML's false
    with pytest.raises(ConfigError, match="progress must be true or false"):
        make_config({}, str(wrong_type))
    with pytest.raises(ConfigError, match="cannot be read: Is a directory"):
        make_config({}, str(tmp_path))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="is not valid TOML: 'utf-8' codec"):
        make_config({}, str(binary))


def test_cli_reports_config_errors(capsys):
    assert main(["train", "--epochs", "0"]) == 2
    assert "epochs must be at least 1" in capsys.readouterr().err


def test_config_is_plain_data():
    cfg = TrainConfig(model="cnn").resolved()
    assert json.loads(json.dumps(cfg.to_dict()))["model"] == "cnn"


def test_a_tilde_in_paths_is_the_home_folder(tmp_path, monkeypatch):
    # a config file's out = "~/runs/{model}" made a folder named "~" in the working folder
    monkeypatch.setenv("HOME", str(tmp_path))
    config = tmp_path / "run.toml"
    config.write_text('out = "~/runs/{model}"\ndata-dir = "~/data"\n')
    cfg = make_config({"model": "mlp"}, str(config))
    assert cfg.out == str(tmp_path / "runs" / "mlp")
    assert cfg.data_dir == str(tmp_path / "data")
