"""Pipeline bubble, measured: each stage's idle share of a training step (time blocked in
receives and final sends) next to the theoretical ``(p - 1) / (m + p - 1)``, for GPipe and 1F1B
over several micro-batch counts.

``ember launch -n 2 benchmarks/pipeline_bubble.py [--width 512] [--batch 128] [--steps 6]``
prints a Markdown table (median over the steps after one warm-up). The model is a stack of
equal ``Linear + Tanh`` layers, the same number on every stage.
"""

from __future__ import annotations

import argparse
import statistics


def measure(args: argparse.Namespace) -> None:
    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember import nn
    from ember.distributed.pipeline import Pipeline

    dist.init_process_group("mpi")
    p, rank = dist.get_world_size(), dist.get_rank()
    layers = []
    for _ in range(args.layers_per_stage * p):
        layers += [nn.Linear(args.width, args.width), nn.Tanh()]
    model = nn.Sequential(*layers)
    x, t = ember.randn(args.batch, args.width), ember.randn(args.batch, args.width)
    rows = []
    for schedule in ("gpipe", "1f1b"):
        for chunks in args.chunks:
            pipe = Pipeline(model, chunks, schedule=schedule)
            shares, times = [], []
            for step in range(args.steps + 1):
                pipe.train_step(x, t, F.mse_loss)
                if step:  # the first step warms caches and allocators
                    shares.append(pipe.stats.bubble)
                    times.append(pipe.stats.step_s)
            per_stage = [None] * p
            dist.all_gather_object(per_stage, (statistics.median(shares), statistics.median(times)))
            if rank == 0:
                measured = " / ".join(f"{s:.2f}" for s, _ in per_stage)
                step_ms = max(ms for _, ms in per_stage) * 1e3
                rows.append(
                    f"| {schedule} | {p} | {chunks} | {pipe.stats.theoretical_bubble:.2f}"
                    f" | {measured} | {step_ms:.1f} |"
                )
    if rank == 0:
        print(
            f"width {args.width}, batch {args.batch}, {args.layers_per_stage} Linear+Tanh per "
            f"stage, median of {args.steps} steps\n"
        )
        print(
            "| schedule | stages p | micro-batches m | (p-1)/(m+p-1) | measured idle share "
            "per stage | step ms |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--layers-per-stage", type=int, default=4)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--steps", type=int, default=6)
    measure(parser.parse_args())


if __name__ == "__main__":
    main()
