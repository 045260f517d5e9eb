"""``ember train --profile N``: profiles N training steps of the configured model and writes
the op table (``profile.txt``) and a Chrome/Perfetto trace (``trace.json``) to ``--out``."""

from __future__ import annotations

import itertools
import os
from typing import Any

import ember
from ember.train.checkpoint import make_out_dir
from ember.train.config import ConfigError, TrainConfig
from ember.train.data import build_loaders
from ember.train.loop import build_model, build_optimizer, make_step


def profile_steps(cfg: TrainConfig, steps: int, warmup: int = 1) -> dict[str, Any]:
    """Runs ``warmup`` + ``steps`` training steps, profiling the last ``steps`` (each in a
    ``step N`` region); returns the paths written and the table. The training data is
    repeated when the steps outrun one epoch. It starts from a fresh model and writes no
    checkpoint, so options about a run's checkpoints and logs (``resume``, ``tensorboard``)
    are refused, and ``compile`` too: a compiled function runs eagerly under the profiler."""
    cfg = cfg.resolved()
    if steps < 1:
        raise ConfigError(f"profile: --profile N needs at least 1 step, got {steps}")
    if warmup < 0:
        raise ConfigError(f"profile: warmup must not be negative, got {warmup}")
    for name in ("resume", "tensorboard"):
        if getattr(cfg, name):
            raise ConfigError(f"profile: --{name} does not apply (a profile runs {steps} "
                              "steps of a fresh model and writes only profile.txt and "
                              f"trace.json); drop --{name}")
    if cfg.compile:
        raise ConfigError("profile: --compile does not apply (the profiler records ops one by "
                          "one, so a compiled step runs eagerly under it); drop --compile "
                          "(docs/jit.md says how to time a compiled step's lines)")
    make_out_dir(cfg.out)
    ember.manual_seed(cfg.seed)
    model = build_model(cfg)
    optimizer = build_optimizer(cfg, model)
    loader = build_loaders(cfg)[0]
    model.train()
    batches = itertools.chain.from_iterable(itertools.repeat(loader))
    step = make_step(model, optimizer)
    for _ in range(warmup):
        step(*next(batches))
    with ember.profiler.profile(record_shapes=True, profile_memory=True, with_flops=True) as prof:
        for i in range(steps):
            with ember.profiler.record_function(f"step {i}"):
                step(*next(batches))
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
    paths = {"table": os.path.join(cfg.out, "profile.txt"),
             "trace": os.path.join(cfg.out, "trace.json")}
    with open(paths["table"], "w") as f:
        f.write(table)
    prof.export_chrome_trace(paths["trace"])
    return {"table": table, "paths": paths}
