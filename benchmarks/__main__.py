"""``python -m benchmarks [workload …] [--quick] [--out results]`` (also ``ember bench``).

Runs Ember and PyTorch side by side on each workload (all by default: mlp, cnn, resnet18, gpt,
gpt_sdpa, infer_mlp_b1, infer_cnn_b1, ops, gemm, membw), prints a Markdown table and writes
``<out>.md`` and ``<out>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks import report, suite, workloads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="workload",
                        help=f"any of {', '.join(workloads.ALL)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller ceilings")
    parser.add_argument("--threads", type=int, default=2, help="threads per framework (2)")
    parser.add_argument("--no-memory", dest="memory", action="store_false",
                        help="skip the peak-memory subprocesses")
    parser.add_argument("--out", default="bench_results",
                        help="write <out>.md and <out>.json (default bench_results)")
    args = parser.parse_args(argv)
    try:
        result = suite.run(args.workloads, args.quick, args.threads, args.memory,
                           log=lambda s: print(s, file=sys.stderr, flush=True))
    except ValueError as e:
        parser.error(str(e))
    table = report.markdown(result)
    print(table)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(table)
        with open(args.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
