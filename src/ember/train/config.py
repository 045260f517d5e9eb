"""Options of a training run (:class:`TrainConfig`): defaults per model, a TOML file, and
command-line flags, merged in that order (later ones win)."""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

from ember.errors import EmberError

# Defaults chosen per model so that ``ember train --model <name>`` reaches its target accuracy
# (cnn >= 91 %, mlp >= 88 % on Fashion-MNIST in 5 epochs) with no further flags.
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "mlp": {"optimizer": "adamw", "lr": 1e-3, "batch_size": 128, "weight_decay": 1e-4},
    "cnn": {"optimizer": "adamw", "lr": 1e-3, "batch_size": 64, "weight_decay": 1e-4},
    "lenet5": {"optimizer": "adamw", "lr": 2e-3, "batch_size": 64, "weight_decay": 1e-4},
    "resnet18": {"optimizer": "sgd", "lr": 0.05, "batch_size": 128, "weight_decay": 5e-4},
}
OPTIMIZERS = ("sgd", "adam", "adamw")
DATASETS = ("fashion-mnist",)


class ConfigError(EmberError, ValueError):
    """A training option that is unknown or has a bad value."""


@dataclass
class TrainConfig:
    """Everything a run needs. Unset (``None``) options take the model's defaults.

    Example:
        >>> cfg = TrainConfig(model="cnn", epochs=5).resolved()
        >>> cfg.optimizer, cfg.lr
        ('adamw', 0.001)
    """

    model: str = "cnn"
    dataset: str = "fashion-mnist"
    epochs: int = 5
    batch_size: int | None = None
    lr: float | None = None
    optimizer: str | None = None
    momentum: float | None = None     # SGD's (default 0.9); Adam and AdamW have none
    weight_decay: float | None = None
    seed: int = 0
    out: str = "runs/{model}"
    resume: bool = False
    overwrite: bool = False           # start afresh in an --out that holds checkpoints
    keep_last: int | None = None      # keep only the newest N epochs' checkpoints (default all)
    data_dir: str | None = None
    train_size: int | None = None     # use only the first N training images (quick runs)
    test_size: int | None = None      # evaluate on the first N test images
    num_workers: int = 0
    progress: bool = True
    compile: bool = False             # run the training step as an ember.jit graph
    tensorboard: bool = False         # also log to <out>/tensorboard for TensorBoard
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    _is_resolved = False  # (set on what resolved() returns; a copy of it starts unset)

    def resolved(self) -> TrainConfig:
        """A copy with the model's defaults filled in and every value checked (the config
        itself if it is such a copy already)."""
        if self._is_resolved:  # (formatting out again would undo an escaped {{ or }})
            return self
        for name in FIELDS:
            _check_type(name, getattr(self, name))
        if self.model not in MODEL_DEFAULTS:
            raise ConfigError(f"unknown model {self.model!r}; choose one of "
                              f"{', '.join(MODEL_DEFAULTS)}")
        if self.dataset not in DATASETS:
            raise ConfigError(f"unknown dataset {self.dataset!r}; choose one of "
                              f"{', '.join(DATASETS)}")
        defaults = MODEL_DEFAULTS[self.model]
        values = {k: (defaults[k] if getattr(self, k) is None else getattr(self, k))
                  for k in defaults}
        try:
            out = self.out.format(model=self.model)
        except (KeyError, IndexError, ValueError):
            raise ConfigError(f"out {self.out!r}: the only placeholder allowed is {{model}}"
                              ) from None
        # "~" as the shell expands it (a config file's "~/runs" made a folder named "~")
        out = os.path.expanduser(out)
        data_dir = None if self.data_dir is None else os.path.expanduser(self.data_dir)
        cfg = dataclasses.replace(self, **values, out=out, data_dir=data_dir)
        if cfg.optimizer not in OPTIMIZERS:
            raise ConfigError(f"unknown optimizer {cfg.optimizer!r}; choose one of "
                              f"{', '.join(OPTIMIZERS)}")
        if cfg.optimizer != "sgd" and cfg.momentum is not None:
            raise ConfigError(f"momentum is SGD's; {cfg.optimizer} has none (its betas play that "
                              "part): leave --momentum out, or train with --optimizer sgd")
        if cfg.optimizer == "sgd" and cfg.momentum is None:
            cfg.momentum = 0.9
        for name in ("epochs", "batch_size", "train_size", "test_size", "keep_last"):
            value = getattr(cfg, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if not -2**63 <= cfg.seed < 2**64:
            raise ConfigError(f"seed must be a 64-bit integer (in [-2**63, 2**64)), got "
                              f"{cfg.seed}")
        if cfg.resume and cfg.overwrite:
            raise ConfigError("resume and overwrite exclude each other: --resume continues the "
                              "run in --out, --overwrite deletes its checkpoints and starts "
                              "afresh")
        if not 0 < cfg.lr < math.inf:
            raise ConfigError(f"lr must be positive and finite, got {cfg.lr}")
        for name in ("momentum", "weight_decay", "num_workers"):
            if getattr(cfg, name) is not None and not 0 <= getattr(cfg, name) < math.inf:
                raise ConfigError(f"{name} must be non-negative and finite, "
                                  f"got {getattr(cfg, name)}")
        cfg._is_resolved = True
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """The options as plain data (for the JSON summary and checkpoints)."""
        d = dataclasses.asdict(self)
        d.pop("extra")
        return d


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig) if f.name != "extra"}
_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "str": (str,),
          "None": (type(None),)}
_NAMES = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}


def _check_type(name: str, value: Any) -> None:
    """Raises a ConfigError unless ``value`` has the type the field ``name`` declares (TOML's
    ``epochs = "5"`` or ``resume = "false"`` must not pass as a number or as true)."""
    kinds = [k.strip() for k in FIELDS[name].type.split("|")]
    ok = any(isinstance(value, _TYPES[k]) for k in kinds)
    if not ok or (isinstance(value, bool) and "bool" not in kinds):
        wanted = " or ".join(_NAMES[k] for k in kinds if k != "None")
        raise ConfigError(f"option {name} must be {wanted}, got {value!r}")


def _normalise(options: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for key, value in options.items():
        name = key.replace("-", "_")
        if name not in FIELDS:
            raise ConfigError(f"{where}: unknown option {key!r}; known options: "
                              f"{', '.join(sorted(FIELDS))}")
        out[name] = value
    return out


def load_toml(path: str) -> dict[str, Any]:
    """Reads options from a TOML file: top-level keys, or a ``[train]`` table.

    Example file::

        model = "cnn"
        epochs = 5
        batch-size = 64
    """
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path!r} does not exist") from None
    except OSError as e:  # a directory, no permission
        raise ConfigError(f"config file {path!r} cannot be read: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path!r} is not valid TOML: {e}") from None
    if isinstance(data.get("train"), dict):
        data = {**{k: v for k, v in data.items() if k != "train"}, **data["train"]}
    return _normalise(data, path)


def make_config(flags: dict[str, Any] | None = None, config_file: str | None = None
                ) -> TrainConfig:
    """Merges a TOML file and command-line flags (flags given as ``None`` are unset) into a
    resolved :class:`TrainConfig`."""
    options = load_toml(config_file) if config_file else {}
    options.update(_normalise({k: v for k, v in (flags or {}).items() if v is not None},
                              "command line"))
    return TrainConfig(**options).resolved()
