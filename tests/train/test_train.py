"""``ember train`` end to end on a few hundred Fashion-MNIST images: files written, resume
continues to exactly the losses of an uninterrupted run, the CLI with a TOML config."""

import errno
import json
import os
import shutil

import pytest

from ember.cli import main
from ember.train import make_config, run
from ember.train.config import ConfigError

DATA = "/usr/share/datasets/fashion-mnist"
pytestmark = pytest.mark.skipif(not os.path.isdir(DATA), reason="Fashion-MNIST not installed")

# 640 images in batches of 64: 10 steps an epoch.
SHORT = {"model": "cnn", "train_size": 640, "test_size": 200, "batch_size": 64,
         "progress": False, "seed": 3}
# One step an epoch, for what the files and errors do rather than what training gives.
TINY = {"model": "mlp", "train_size": 64, "test_size": 50, "batch_size": 64, "progress": False}


def test_resume_continues_exactly(tmp_path):
    whole = run(make_config({**SHORT, "epochs": 2, "out": str(tmp_path / "whole")}))
    # A run stopped after epoch 1: only its first checkpoint exists.
    out = tmp_path / "parts"
    out.mkdir()
    shutil.copy(tmp_path / "whole" / "epoch_001.safetensors", out)
    resumed = run(make_config({**SHORT, "epochs": 2, "out": str(out), "resume": True}))
    assert resumed["epochs_done"] == 2
    assert len(whole["history"]["step_loss"]) == 20
    assert resumed["history"]["step_loss"] == whole["history"]["step_loss"]
    assert resumed["history"]["test_accuracy"] == whole["history"]["test_accuracy"]
    assert {"epoch_001.safetensors", "epoch_002.safetensors", "curves.png",
            "summary.json"} <= set(os.listdir(out))
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_resume_refuses_another_optimizer_and_warns_on_changed_settings(tmp_path):
    out = str(tmp_path / "run")
    run(make_config({**SHORT, "epochs": 1, "out": out, "train_size": 128}))
    with pytest.raises(ConfigError, match="holds a run with optimizer adamw, not sgd; .*"
                       "--optimizer adamw"):
        run(make_config({**SHORT, "epochs": 2, "out": out, "train_size": 128, "resume": True,
                         "optimizer": "sgd"}))
    with pytest.warns(UserWarning, match=r"lr 0.001 -> 0.01, seed 3 -> 4; it will not match"):
        done = run(make_config({**SHORT, "epochs": 2, "out": out, "train_size": 128,
                                "resume": True, "lr": 0.01, "seed": 4}))
    assert done["epochs_done"] == 2


def test_data_dir_without_the_files_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=f"--data-dir {empty}: the dataset files are not "
                       f"there \\(found {DATA}/train-images"):
        run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "o"),
                         "data_dir": str(empty)}))
    for name in os.listdir(DATA):  # the same files in the named folder are read from there
        os.symlink(os.path.join(DATA, name), empty / name)
    done = run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "o"),
                            "data_dir": str(empty), "train_size": 64}))
    assert done["epochs_done"] == 1


def test_same_seed_same_run_and_step_losses_kept(tmp_path):
    import ember
    a = run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "a")}))
    b = run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "b")}))
    assert a["history"]["train_loss"] == b["history"]["train_loss"]
    assert a["history"]["test_accuracy"] == b["history"]["test_accuracy"]
    state = ember.load(str(tmp_path / "a" / "epoch_001.safetensors"))
    assert len(state["history"]["step_loss"]) == 10 and state["epoch"] == 1
    assert set(state) >= {"model", "optimizer", "rng", "history", "config"}


def test_cli_with_toml_config(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('model = "mlp"\nepochs = 1\ntrain-size = 256\ntest-size = 100\n'
                      'batch-size = 64\nprogress = false\n')
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--out", str(out), "--seed", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["model"] == "mlp" and summary["config"]["seed"] == 1
    assert 0.0 <= summary["final_test_accuracy"] <= 1.0
    assert "final test accuracy" in capsys.readouterr().out
    assert main(["train", "--model", "cnn", "--out", str(out), "--resume"]) == 2
    assert "holds a run with model mlp, not cnn" in capsys.readouterr().err
    assert main(["train", "--config", str(config), "--out", str(out), "--seed", "1",
                 "--resume", "--epochs", "2", "--lr", "0.01"]) == 0
    assert "ember train: warning: --resume: the run continues with settings that differ" in \
        capsys.readouterr().err


def test_compiled_training_gives_the_eager_losses(tmp_path):
    eager = run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "e")}))
    compiled = run(make_config({**SHORT, "epochs": 1, "out": str(tmp_path / "c"),
                                "compile": True}))
    a, b = eager["history"]["step_loss"], compiled["history"]["step_loss"]
    assert len(a) == len(b) == 10
    assert all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b))
    assert compiled["history"]["test_accuracy"] == pytest.approx(
        eager["history"]["test_accuracy"], abs=0.01)


def test_num_workers_reaches_the_loaders():
    from ember.train.data import build_loaders
    train, test, _ = build_loaders(make_config({**SHORT, "num_workers": 2}))
    assert train.num_workers == test.num_workers == 2


def test_profile_more_steps_than_one_epoch_holds(tmp_path):
    from ember.train.profile import profile_steps
    cfg = make_config({**SHORT, "model": "mlp", "train_size": 64, "out": str(tmp_path)})
    done = profile_steps(cfg, steps=2)  # 1 warmup + 2 steps on a 1-batch epoch
    assert "step 1" in done["table"] and os.path.exists(done["paths"]["trace"])
    assert main(["train", "--profile", "-1", "--out", str(tmp_path)]) == 2


@pytest.mark.parametrize("flag", ["--resume", "--tensorboard", "--compile"])
def test_profile_refuses_the_options_it_would_ignore(tmp_path, capsys, flag):
    assert main(["train", "--profile", "1", "--out", str(tmp_path), flag]) == 2
    assert f"profile: {flag} does not apply" in capsys.readouterr().err
    assert not os.listdir(tmp_path)


def test_keep_last_deletes_all_but_the_newest_checkpoints(tmp_path):
    out = tmp_path / "run"
    run(make_config({**TINY, "epochs": 3, "out": str(out), "keep_last": 2}))
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_002.safetensors",
                                                          "epoch_003.safetensors"]
    assert main(["train", "--model", "mlp", "--train-size", "64", "--test-size", "50",
                 "--batch-size", "64", "--no-progress", "--epochs", "4", "--out", str(out),
                 "--resume", "--keep-last", "1"]) == 0
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_004.safetensors"]
    with pytest.raises(ConfigError, match="keep_last must be at least 1, got 0"):
        make_config({**TINY, "keep_last": 0})


def test_a_resumed_run_keeps_its_keep_last(tmp_path, capsys):
    out = tmp_path / "run"
    run(make_config({**TINY, "epochs": 2, "out": str(out), "keep_last": 2}))
    assert main(["train", "--model", "mlp", "--train-size", "64", "--test-size", "50",
                 "--batch-size", "64", "--no-progress", "--epochs", "4", "--out", str(out),
                 "--resume"]) == 0
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_003.safetensors",
                                                          "epoch_004.safetensors"]
    assert "keeps the newest 2 checkpoints, as the run did" in capsys.readouterr().out
    assert json.loads((out / "summary.json").read_text())["config"]["keep_last"] == 2


def test_tensorboard_logs_the_run_without_changing_it(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    plain = run(make_config({**SHORT, "epochs": 2, "out": str(tmp_path / "plain")}))
    out = tmp_path / "logged"
    logged = run(make_config({**SHORT, "epochs": 2, "out": str(out), "tensorboard": True}))
    assert logged["history"] == {**plain["history"],
                                 "epoch_seconds": logged["history"]["epoch_seconds"]}
    reader = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0})
    reader.Reload()
    losses = reader.Scalars("train/loss")
    assert [s.step for s in losses] == list(range(20))
    assert [s.value for s in losses] == pytest.approx(logged["history"]["step_loss"], rel=1e-6)
    assert [s.step for s in reader.Scalars("epoch/test_accuracy")] == [9, 19]
    assert [s.value for s in reader.Scalars("epoch/test_accuracy")] == \
        pytest.approx(logged["history"]["test_accuracy"])
    assert reader.Scalars("train/lr")[0].value == pytest.approx(1e-3)
    assert any(n.op == "Parameter" for n in reader.Graph().node)
    hparams = EventAccumulator(str(out / "tensorboard" / "hparams"))
    hparams.Reload()
    assert hparams.Scalars("hparam/test_accuracy")[0].value == \
        pytest.approx(logged["final_test_accuracy"])


def test_a_resumed_run_hides_what_the_interrupted_one_logged_after_its_checkpoint(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    run(make_config({**SHORT, "epochs": 2, "out": str(out), "tensorboard": True}))
    os.remove(out / "epoch_002.safetensors")  # as if stopped during epoch 2's checkpoint
    resumed = run(make_config({**SHORT, "epochs": 2, "out": str(out), "tensorboard": True,
                               "resume": True}))
    reader = EventAccumulator(str(out / "tensorboard"), size_guidance={"scalars": 0})
    reader.Reload()
    losses = reader.Scalars("train/loss")
    assert [s.step for s in losses] == list(range(20))  # epoch 2 once, not twice
    assert [s.value for s in losses] == pytest.approx(resumed["history"]["step_loss"],
                                                      rel=1e-6)


def test_a_second_run_into_the_same_folder_replaces_the_first_ones_logs(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = str(tmp_path / "run")
    run(make_config({**SHORT, "epochs": 1, "out": out, "tensorboard": True}))
    again = run(make_config({**SHORT, "epochs": 1, "out": out, "tensorboard": True,
                             "lr": 2e-3, "overwrite": True}))
    reader = EventAccumulator(os.path.join(out, "tensorboard"), size_guidance={"scalars": 0})
    reader.Reload()
    losses = reader.Scalars("train/loss")
    assert [s.step for s in losses] == list(range(10))
    assert [s.value for s in losses] == pytest.approx(again["history"]["step_loss"], rel=1e-6)
    hparams = EventAccumulator(os.path.join(out, "tensorboard", "hparams"))
    hparams.Reload()
    assert [s.value for s in hparams.Scalars("hparam/test_accuracy")] == \
        pytest.approx([again["final_test_accuracy"]])


def test_an_out_that_cannot_be_a_folder_is_named(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for out in (tmp_path / "file", tmp_path / "file" / "sub"):
        with pytest.raises(ConfigError, match=f"--out '{out}': cannot create the folder"):
            run(make_config({**TINY, "out": str(out)}))
    assert main(["train", "--out", str(tmp_path / "file"), "--profile", "1"]) == 2
    assert "cannot create the folder (File exists); pick another --out" in capsys.readouterr().err


def test_a_fresh_run_does_not_replace_another_runs_checkpoints(tmp_path):
    out = tmp_path / "run"
    run(make_config({**TINY, "epochs": 2, "out": str(out)}))
    before = (out / "epoch_002.safetensors").read_bytes()
    with pytest.raises(ConfigError, match="holds the checkpoints of an earlier run "
                       r"\(epoch_001.safetensors to epoch_002.safetensors\); continue it with "
                       "--resume, start afresh with --overwrite"):
        run(make_config({**TINY, "epochs": 1, "out": str(out), "seed": 1}))
    assert (out / "epoch_002.safetensors").read_bytes() == before
    # --overwrite deletes them all, so that a later --resume cannot pick up epoch 2 of the
    # earlier run
    run(make_config({**TINY, "epochs": 1, "out": str(out), "seed": 1, "overwrite": True}))
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_001.safetensors"]


def test_an_unusable_newest_checkpoint_is_named_with_the_one_before(tmp_path):
    import ember
    out = tmp_path / "run"
    run(make_config({**TINY, "epochs": 2, "out": str(out)}))
    newest = out / "epoch_002.safetensors"
    state = ember.load(str(newest))
    resume = make_config({**TINY, "epochs": 2, "out": str(out), "resume": True})
    newest.write_bytes(newest.read_bytes()[:100_000])  # a copy cut short
    with pytest.raises(ConfigError, match=r"epoch_002.safetensors cannot be read \(.*the file "
                       r"is truncated\); move it out of the folder to resume from .*epoch_001"):
        run(resume)
    ember.save({"w": ember.ones(2)}, str(newest))
    with pytest.raises(ConfigError, match="is not a checkpoint of ember train .*lacks epoch, "
                       "model, optimizer, rng, history, config"):
        run(resume)
    ember.save({**state, "model": {"w": ember.ones(2)}}, str(newest))
    with pytest.raises(ConfigError, match="(?s)does not fit this mlp and adamw .*Unexpected key"):
        run(resume)


def test_a_full_disk_keeps_the_last_checkpoint_and_says_so(tmp_path, monkeypatch, capsys):
    import ember
    from ember.io import safetensors_file

    save = ember.save

    def disk_full_at_epoch_2(obj, f, *args, **kwargs):
        if str(f).endswith("epoch_002.safetensors"):
            def full(*_):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            monkeypatch.setattr(safetensors_file, "write_array", full)
        return save(obj, f, *args, **kwargs)

    monkeypatch.setattr(ember, "save", disk_full_at_epoch_2)
    out = tmp_path / "run"
    args = ["train", "--model", "mlp", "--train-size", "64", "--test-size", "50",
            "--no-progress", "--epochs", "2", "--out", str(out)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{out}/epoch_002.safetensors: the checkpoint of epoch 2 could not be written (No " \
           f"space left on device); {out}/epoch_001.safetensors is intact: make room and " \
           "continue with --resume" in err and "Traceback" not in err
    assert sorted(os.listdir(out)) == ["epoch_001.safetensors"]  # no temporary file left
    monkeypatch.undo()
    assert ember.load(str(out / "epoch_001.safetensors"))["epoch"] == 1
    assert main([*args, "--resume"]) == 0


def test_any_64_bit_seed_trains(tmp_path):
    # the data order's seed, seed * 1_000_003 + epoch, overflowed 64 bits from seed 2**44
    done = run(make_config({**TINY, "epochs": 1, "out": str(tmp_path), "seed": 2**64 - 1}))
    assert done["epochs_done"] == 1


def test_the_summary_of_a_diverged_run_is_strict_json(tmp_path):
    with pytest.warns(UserWarning, match=r"epoch 1, step \d+: the loss is (nan|inf): the training "
                      r"diverged. Hint: lower --lr \(now 1e\+30\)") as caught:
        done = run(make_config({**TINY, "epochs": 1, "out": str(tmp_path), "optimizer": "sgd",
                                "lr": 1e30, "batch_size": 16}))
    assert sum("diverged" in str(w.message) for w in caught) == 1  # (once, not every step)
    with pytest.warns(UserWarning, match="diverged") as caught:  # (nor every epoch)
        run(make_config({**TINY, "epochs": 2, "out": str(tmp_path / "two"), "optimizer": "sgd",
                         "lr": 1e30, "batch_size": 16}))
    assert sum("diverged" in str(w.message) for w in caught) == 1
    assert done["history"]["test_loss"][0] != done["history"]["test_loss"][0]  # NaN
    text = (tmp_path / "summary.json").read_text()
    summary = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert summary["history"]["test_loss"] == [None]


@pytest.mark.parametrize("steps", ["0", "-1"])
def test_profile_of_no_steps_is_refused_not_a_full_run(tmp_path, capsys, steps):
    # --profile 0 used to train a whole run (0 meant "no profile")
    assert main(["train", "--profile", steps, "--out", str(tmp_path)]) == 2
    assert f"--profile N needs at least 1 step, got {steps}" in capsys.readouterr().err
    assert not os.listdir(tmp_path)


def test_run_resolves_a_plain_config(tmp_path, monkeypatch):
    # run(TrainConfig(...)) made a folder named "runs/{model}" and failed on lr None
    from ember.train import TrainConfig
    monkeypatch.chdir(tmp_path)
    options = {**TINY, "epochs": 1, "data_dir": DATA}
    summary = run(TrainConfig(**options))
    assert summary["config"]["lr"] == 1e-3 and summary["config"]["out"] == "runs/mlp"
    assert os.listdir(tmp_path / "runs") == ["mlp"]
    cfg = make_config({**options, "out": str(tmp_path / "a{{b}}")})
    assert cfg.resolved() is cfg and run(cfg)["config"]["out"] == str(tmp_path / "a{b}")


def test_curves_leave_the_callers_matplotlib_backend(tmp_path):
    # plot_history switched the process to Agg (matplotlib.use), closing a notebook's or an
    # interactive session's backend under it
    from ember.train.plot import plot_history
    matplotlib = pytest.importorskip("matplotlib")
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        plot_history({"step_loss": [1.0, 0.5], "train_loss": [0.75], "test_accuracy": [0.5]},
                     str(tmp_path / "curves.png"), "title")
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
