"""``python -m benchmarks.jit [workload …] [--quick] [--out jit_results]``: compiled vs eager vs
PyTorch eager on the suite's workloads, in one run.

For each workload: the median step time of Ember eager, Ember compiled (``ember.jit.compile``
of the same step) and PyTorch eager, alternating, after warm-up; the ratios compiled/PyTorch
and eager/compiled; the compile time (the first call: trace, passes, code generation) and the
graph's size; and peak RSS growth of each (fresh interpreters, as the main suite measures it),
with the step's working memory that ``tracemalloc`` counts for Ember eager and compiled.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from benchmarks import workloads
from benchmarks.suite import _set_threads, machine, measure_peak
from benchmarks.timing import compare, fmt_time, summary

# a timed run lasts this long at least: one 10 ms step alone is at the mercy of the host (a
# quick run's mlp read 1.49x PyTorch, three more runs of it 1.08-1.14)
_LEAST_SECONDS = 0.1
DEFAULT = ("mlp", "cnn", "resnet18", "gpt", "gpt_sdpa", "infer_mlp_b1", "infer_cnn_b1")


def run_workload(name: str, quick: bool, threads: int, memory: bool) -> dict[str, Any]:
    """Times one workload three ways; returns its row."""
    spec = workloads.TRAINING[name]
    eager, model = workloads.build(name, "ember", 1.0)
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    torch_step, _ = workloads.build(name, "torch", 1.0, weights)
    compiled, traced = workloads.compiled_step(name)
    compiled()  # the first call traces, optimizes and generates the code
    if spec.train:
        repeats, calls, warmup = (3, 1, 1) if quick else (7, 2, 2)
    else:
        repeats, calls, warmup = (3, 50, 5) if quick else (7, 200, 20)
    samples = compare({"eager": eager, "compiled": compiled, "torch": torch_step}, calls,
                      repeats, warmup, least=_LEAST_SECONDS)
    med = {k: summary(v)[0] for k, v in samples.items()}
    row = {"workload": name, "seconds": med, "compile_s": traced.last.trace_seconds,
           "equations": len(traced.graph.eqns),
           "compiled/torch": med["compiled"] / med["torch"],
           "eager/compiled": med["eager"] / med["compiled"]}
    if memory and spec.train:
        peaks = {fw: measure_peak(name, fw, 1.0, threads) for fw in ("ember", "ember-jit", "torch")}
        row["rss_peak"] = {fw: peak.get("rss_peak") for fw, peak in peaks.items()}
        row["step_peak"] = {fw: peaks[fw].get("step_peak") for fw in ("ember", "ember-jit")}
    return row


def markdown(rows: list[dict[str, Any]], info: dict[str, Any]) -> str:
    lines = [f"Machine: {info['cpu']}, {info['threads']} threads; torch {info['torch']}, "
             f"numpy {info['numpy']}; BLAS {info.get('blas', '?')}", "",
             "| workload | Ember eager | Ember compiled | PyTorch | compiled/PyTorch | "
             "eager/compiled | compile | equations | peak RSS eager / compiled / PyTorch | "
             "step memory eager / compiled |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        mem_cells = [" / ".join(f"{(v or 0) / 2**20:.0f} MiB" for v in r[key].values())
                     if r.get(key) else "" for key in ("rss_peak", "step_peak")]
        lines.append(f"| {r['workload']} | {fmt_time(s['eager'])} | {fmt_time(s['compiled'])} "
                     f"| {fmt_time(s['torch'])} | {r['compiled/torch']:.2f} | "
                     f"{r['eager/compiled']:.2f} | {r['compile_s']:.2f} s | {r['equations']} | "
                     f"{' | '.join(mem_cells)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=list(DEFAULT),
                        help=f"any of {', '.join(DEFAULT)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-memory", dest="memory", action="store_false")
    parser.add_argument("--out", default="jit_results", help="write <out>.md and <out>.json")
    args = parser.parse_args(argv)
    unknown = set(args.workloads) - set(DEFAULT)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(DEFAULT)}")
    _set_threads(args.threads)
    rows = []
    for name in args.workloads:
        print(f"{name} …", file=sys.stderr, flush=True)
        rows.append(run_workload(name, args.quick, args.threads, args.memory))
    info = machine(args.threads)
    table = markdown(rows, info)
    print(table)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(table)
        with open(args.out + ".json", "w") as f:
            json.dump({"rows": rows, "machine": info}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
