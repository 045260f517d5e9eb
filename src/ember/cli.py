"""The ``ember`` command: ``ember info`` prints the version and each device's capabilities;
``ember train`` trains a model from the zoo (see :mod:`ember.train`); ``ember bench`` runs the
side-by-side benchmarks of ``benchmarks/``."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from collections.abc import Callable
from typing import Any


def _info(args: argparse.Namespace) -> int:
    import numpy

    import ember
    from ember.backend import capabilities

    print(f"ember {ember.__version__} (Python {platform.python_version()}, "
          f"NumPy {numpy.__version__}, {platform.machine()})")
    print(f"primitives: {len(ember.ops.PRIMITIVES)} registered")
    print(capabilities("cpu").report())
    return 0


def _train(args: argparse.Namespace) -> int:
    from ember.train import ConfigError, make_config, run

    profile_steps = args.profile
    flags = {k: v for k, v in vars(args).items()
             if k not in ("command", "run", "config", "profile")}
    try:
        # warnings of the run (a resume with other settings) as plain lines, not source lines
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _run_training(make_config(flags, args.config), profile_steps, run)
    except ConfigError as e:
        print(f"ember train: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk: the message says which checkpoint is intact
        print(f"ember train: {e.filename}: {e.strerror}" if e.filename else
              f"ember train: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # checkpoints are written atomically: finished epochs are safe
        print("ember train: interrupted; continue from the last finished epoch with --resume",
              file=sys.stderr)
        return 130


def _show_warning(message: Warning | str, *args: Any, **kwargs: Any) -> None:
    print(f"ember train: warning: {message}", file=sys.stderr)


def _run_training(cfg: Any, profile_steps: int | None, run: Callable[[Any], dict]) -> int:
    if profile_steps is not None:  # (--profile 0 is refused, not a full run)
        from ember.train.profile import profile_steps as profile
        done = profile(cfg, profile_steps)
        print(done["table"] + f"table in {done['paths']['table']}, trace (open in "
              f"ui.perfetto.dev) in {done['paths']['trace']}")
        return 0
    summary = run(cfg)
    done = summary["epochs_done"]
    logs = " (tensorboard --logdir " + os.path.join(cfg.out, "tensorboard") + ")" \
        if cfg.tensorboard else ""
    print(f"final test accuracy {summary['final_test_accuracy']:.2%} after {done} "
          f"epoch{'s' * (done != 1)} ({summary['train_seconds']:.0f} s); "
          f"checkpoints, curves.png and summary.json in {cfg.out}{logs}")
    return 0


def _add_train(commands: argparse._SubParsersAction) -> None:
    from ember.train.config import DATASETS, MODEL_DEFAULTS, OPTIMIZERS

    train = commands.add_parser(
        "train", help="train a model on a dataset",
        description="Train a model; flags override --config, which overrides the model's "
                    "defaults (e.g. cnn: adamw, lr 1e-3, batch 64).")
    add = train.add_argument
    add("--model", choices=list(MODEL_DEFAULTS), help="network (default cnn)")
    add("--dataset", choices=DATASETS, help="dataset (default fashion-mnist)")
    add("--epochs", type=int, help="epochs (default 5)")
    add("--batch-size", type=int, help="training batch size")
    add("--lr", type=float, help="peak learning rate (cosine decay to 0)")
    add("--optimizer", choices=OPTIMIZERS, help="sgd (with momentum), adam or adamw")
    add("--momentum", type=float, help="SGD momentum (default 0.9; sgd only)")
    add("--weight-decay", type=float, help="weight decay")
    add("--seed", type=int, help="seed of weights and data order (default 0)")
    add("--out", help="directory for checkpoints, curves.png, summary.json "
                      "(default runs/<model>)")
    add("--resume", action="store_true", default=None,
        help="continue from the newest checkpoint in --out")
    add("--overwrite", action="store_true", default=None,
        help="start afresh in an --out that holds checkpoints (deletes them)")
    add("--keep-last", type=int, metavar="N",
        help="keep only the newest N epochs' checkpoints (default: every epoch's)")
    add("--config", help="TOML file with the same options (top level or [train] table)")
    add("--data-dir", help="where the dataset files are (default: the installed package's)")
    add("--train-size", type=int, help="train on the first N images only")
    add("--test-size", type=int, help="test on the first N images only")
    add("--num-workers", type=int, help="data-loading worker processes (default 0)")
    add("--no-progress", dest="progress", action="store_false", default=None,
        help="no progress bar")
    add("--compile", action="store_true", default=None,
        help="compile the training step with ember.jit (forward, backward, optimizer)")
    add("--tensorboard", action="store_true", default=None,
        help="also log losses, accuracy, learning rate, the model's graph and the "
             "hyperparameters to <out>/tensorboard (pip install 'ember[tensorboard]')")
    add("--profile", type=int, metavar="N",
        help="profile N training steps instead of training; writes profile.txt, trace.json")
    train.set_defaults(run=_train)


def _bench(argv: list[str]) -> int:
    if os.getcwd() not in sys.path:  # the console script's path lacks the repository root
        sys.path.insert(0, os.getcwd())
    try:
        from benchmarks.__main__ import main as bench
    except ImportError:
        print("ember bench: the benchmarks/ folder of Ember's repository must be importable "
              "(run it from the repository root)", file=sys.stderr)
        return 2
    return bench(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ember`` console script."""
    parser = argparse.ArgumentParser(prog="ember", description="Ember deep-learning framework")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="version and the capabilities of each device")
    info.set_defaults(run=_info)
    _add_train(commands)
    bench = commands.add_parser("bench", add_help=False,
                                help="Ember vs PyTorch side by side (see ember bench --help)")
    bench.set_defaults(run=lambda args: _bench([]))
    commands.add_parser("launch", add_help=False,
                        help="run a script on N MPI ranks (see ember launch --help)")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # its own parser (benchmarks/__main__.py) reads the rest
        return _bench(argv[1:])
    if argv[:1] == ["launch"]:  # so is ember.distributed.run's
        from ember.distributed.run import main as launch

        return launch(argv[1:])
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
