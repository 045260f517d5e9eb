"""Distributed benchmarks: all-reduce bandwidth (Ember vs raw mpi4py on the same buffers), DDP
step time on 1, 2, 4 ranks for the ``mlp`` and ``gpt`` workloads with scaling efficiency, and
a model of step time vs ranks from the measured compute and all-reduce cost.

Run from the repository root:
    python benchmarks/distributed.py                       # everything, this machine
    python benchmarks/distributed.py --ranks 1 2 --models mlp --steps 5
    python benchmarks/distributed.py --hostfile hosts --ranks 8 16   # a cluster (see the doc)

The driver starts one MPI job per measurement (``--worker`` is the rank code). DDP runs keep
the batch per rank fixed (a quarter of the workload's batch: weak scaling), so with enough
cores the ideal step time would stay flat; efficiency = 1-rank time / N-rank time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20]  # bytes


# -- rank code -----------------------------------------------------------------------------
def _emit(record: dict) -> None:
    print("@@bench", json.dumps(record), flush=True)


def worker_allreduce(repeats: int) -> None:
    """Times ``comm.Allreduce`` and ``ember.distributed.all_reduce`` on the same array,
    interleaved (alternating which goes first) so that both see the same machine load."""
    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    group = dist.init_process_group("mpi")
    comm = group.comm
    for size in SIZES:
        array = np.ones(size // 4, np.float32)
        t = ember.from_numpy(array)
        raw, ours = [], []
        calls = [
            (raw, lambda a=array: comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM)),
            (ours, lambda x=t: dist.all_reduce(x)),
        ]
        for i in range(repeats):
            for times, call in calls[:: 1 if i % 2 else -1]:  # alternate which goes first
                array[...] = 1.0  # same values, same cache state for both
                comm.Barrier()
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
        # the slowest rank's time is the collective's time
        # (median: typical on this shared machine; min: the uncontended cost)
        stats = {
            f"{who}_{name}": comm.allreduce(fn(times), op=MPI.MAX)
            for who, times in (("raw", raw), ("ember", ours))
            for name, fn in (("s", statistics.median), ("min_s", min))
        }
        if group.rank() == 0:
            _emit({"kind": "allreduce", "ranks": group.size(), "bytes": size, **stats})


def worker_ddp(model: str, steps: int) -> None:
    """Median DDP step time of a workload (batch per rank = a quarter of the workload's),
    and the same step under ``no_sync`` (compute only, no communication)."""
    sys.path.insert(0, str(ROOT))
    from mpi4py import MPI

    import ember
    import ember.distributed as dist
    from benchmarks import workloads

    group = dist.init_process_group("mpi")
    spec = workloads.TRAINING[model]
    x, y = workloads.data(spec, 0.25)
    ember.manual_seed(0)
    net = workloads.ember_model(spec)
    ddp = dist.DistributedDataParallel(net)
    step = workloads.make_step(spec, ember, ddp, x, y)
    params = sum(p.nbytes for p in net.parameters())

    def timed() -> float:
        group.comm.Barrier()
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    step()  # warm-up
    full, compute = [], []
    for _ in range(steps):  # alternated, so that both see the same machine load
        full.append(timed())
        with ddp.no_sync():
            compute.append(timed())
    full = group.comm.allreduce(statistics.median(full), op=MPI.MAX)
    compute = group.comm.allreduce(statistics.median(compute), op=MPI.MAX)
    if group.rank() == 0:
        _emit(
            {
                "kind": "ddp",
                "model": model,
                "ranks": group.size(),
                "batch_per_rank": len(x),
                "step_s": full,
                "compute_s": compute,
                "param_bytes": params,
                "threads_per_rank": os.environ.get("OMP_NUM_THREADS"),
            }
        )


# -- the driver ----------------------------------------------------------------------------
def run_job(
    n: int, worker_args: list[str], hostfile: str | None, threads: int | None = None
) -> list[dict]:
    sys.path.insert(0, str(ROOT / "src"))
    from ember.distributed.mpi_env import mpi_env, mpiexec_command

    env = mpi_env(n, single_host=hostfile is None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    if threads:
        env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    cmd = mpiexec_command(n, [str(Path(__file__).resolve()), "--worker", *worker_args], hostfile)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return [
        json.loads(line.split(" ", 1)[1])
        for line in done.stdout.splitlines()
        if line.startswith("@@bench")
    ]


def allreduce_cost(records: list[dict]) -> tuple[float, Callable[[float], float]]:
    """From the uncontended (min) 2-rank all-reduce times: the latency (the smallest
    message's time) and ``bandwidth(bytes)``, interpolated linearly between the measured
    sizes (a single straight-line fit would let one size regime speak for all)."""
    points = sorted((r["bytes"], r["raw_min_s"]) for r in records)
    xs, ts = [p[0] for p in points], [p[1] for p in points]

    def bandwidth(nbytes: float) -> float:
        t = float(np.interp(nbytes, xs, ts))
        if nbytes > xs[-1]:  # beyond the largest size: that size's bandwidth
            t = ts[-1] * nbytes / xs[-1]
        return nbytes / t

    return ts[0], bandwidth


def model_step(compute_s: float, param_bytes: int, n: int, latency: float, bw: float) -> float:
    """Ring all-reduce model: each rank moves 2(N-1)/N of the gradient bytes, in 2(N-1)
    latency-bound steps; no overlap with compute (Ember's engine settles gradients at the
    end of backward)."""
    if n == 1:
        return compute_s
    # on 2 ranks (where 2(N-1)/N = 1) the time is latency + bytes / bandwidth
    return compute_s + 2 * (n - 1) / n * param_bytes / bw + (n - 1) * latency


def report(allreduce: list[dict], ddp: list[dict], network: tuple | None = None) -> str:
    """Markdown tables; ``network`` = (latency s, bandwidth B/s) models a cluster's network
    in place of the measured all-reduce."""
    lines = []
    if allreduce:
        lines += [
            "## All-reduce (float32 sum, in place): median (min) per call",
            "",
            "| ranks | bytes | mpi4py | Ember | Ember overhead, median (min) | "
            "bus bandwidth from the min |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in allreduce:
            n = r["ranks"]
            bus = 2 * (n - 1) / n * r["bytes"] / r["raw_min_s"] / 1e9
            lines.append(
                f"| {n} | {r['bytes']:,} | {r['raw_s'] * 1e6:.1f} ({r['raw_min_s'] * 1e6:.1f}) µs"
                f" | {r['ember_s'] * 1e6:.1f} ({r['ember_min_s'] * 1e6:.1f}) µs | "
                f"{r['ember_s'] / r['raw_s'] - 1:+.1%} "
                f"({r['ember_min_s'] / r['raw_min_s'] - 1:+.1%}) | {bus:.2f} GB/s |"
            )
    if ddp:
        lines += [
            "",
            "## DDP step time (batch per rank fixed)",
            "",
            "| model | ranks | threads/rank | batch/rank | step | compute (no_sync) | "
            "communication | samples/s | efficiency |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        base = {r["model"]: r for r in ddp if r["ranks"] == 1}
        for r in ddp:
            one = base.get(r["model"])
            eff = f"{one['step_s'] / r['step_s']:.0%}" if one else "—"
            rate = r["ranks"] * r["batch_per_rank"] / r["step_s"]
            lines.append(
                f"| {r['model']} | {r['ranks']} | {r.get('threads_per_rank')} | "
                f"{r['batch_per_rank']} | "
                f"{r['step_s'] * 1e3:.0f} ms | {r['compute_s'] * 1e3:.0f} ms | "
                f"{(r['step_s'] - r['compute_s']) * 1e3:.0f} ms | {rate:.0f} | {eff} |"
            )
    two = [r for r in allreduce if r["ranks"] == 2]
    if ddp and (len(two) >= 2 or network):
        if network:
            latency, bandwidth = network[0], lambda nbytes: network[1]
        else:
            latency, bandwidth = allreduce_cost(two)
        lines += [
            "",
            "## Model: step(N) = compute + 2(N-1)/N · gradient bytes / bandwidth + "
            f"(N-1) · latency; latency {latency * 1e6:.1f} µs, "
            + (
                "bandwidth given"
                if network
                else "bandwidth at the gradient's size from the 2-rank all-reduce (min)"
            )
            + ", compute from 1 rank",
            "",
            "| model | gradient bytes | bandwidth | N=1 | 2 | 4 | 8 | 16 | 64 | efficiency at 64 |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, one in {r["model"]: r for r in ddp if r["ranks"] == 1}.items():
            bw = bandwidth(one["param_bytes"])
            ts = [
                model_step(one["compute_s"], one["param_bytes"], n, latency, bw)
                for n in (1, 2, 4, 8, 16, 64)
            ]
            lines.append(
                f"| {name} | {one['param_bytes']:,} | {bw / 1e9:.2f} GB/s | "
                + " | ".join(f"{t * 1e3:.0f} ms" for t in ts)
                + f" | {ts[0] / ts[-1]:.0%} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--models", nargs="*", default=["mlp", "gpt"])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30, help="all-reduce calls per size")
    parser.add_argument("--allreduce-ranks", type=int, nargs="*", default=[2])
    parser.add_argument("--hostfile")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS threads per rank in the DDP runs (1: a rank per core)",
    )
    parser.add_argument("--json", help="also write the records to this file")
    parser.add_argument("--load", help="report from this --json file instead of measuring")
    parser.add_argument(
        "--network",
        type=float,
        nargs=2,
        metavar=("LATENCY_US", "GB_S"),
        help="model a network of this latency and all-reduce bandwidth",
    )
    args = parser.parse_args(argv)
    if args.worker:
        kind, *rest = args.worker
        if kind == "allreduce":
            worker_allreduce(int(rest[0]))
        else:
            worker_ddp(rest[0], int(rest[1]))
        return 0
    if args.load:
        saved = json.loads(Path(args.load).read_text())
        allreduce, ddp = saved["allreduce"], saved["ddp"]
    else:
        allreduce = [
            r
            for n in args.allreduce_ranks
            for r in run_job(n, ["allreduce", str(args.repeats)], args.hostfile)
        ]
        ddp = [
            r
            for model in args.models
            for n in args.ranks
            for r in run_job(n, ["ddp", model, str(args.steps)], args.hostfile, args.threads)
        ]
    network = (args.network[0] * 1e-6, args.network[1] * 1e9) if args.network else None
    print(report(allreduce, ddp, network))
    if args.json and not args.load:
        Path(args.json).write_text(json.dumps({"allreduce": allreduce, "ddp": ddp}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
