"""``python -m benchmarks.line_profile WORKLOAD [--top N] [--calls N]``: the time of each line
of a workload's compiled step (the code ``compiled.code`` shows), slowest first.

A training workload compiles its whole step; an inference one (``infer_*``) its model, called
under ``no_grad`` as a server would. Lines are timed with ``sys.settrace``, which adds ~1 µs a
line: read the shares, not the absolute times, for lines that take a few µs.

Example:
    python -m benchmarks.line_profile gpt --top 20
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks import workloads


def line_times(call: Callable[[], Any], calls: int, source: str) -> collections.Counter:
    """Seconds per call spent on each line (by number) of the frames of generated code
    ``source`` (its file name)."""
    spent: collections.Counter = collections.Counter()
    current: dict[str, Any] = {}

    def local(frame: Any, event: str, arg: Any) -> Any:
        now = time.perf_counter()
        if "line" in current:
            spent[current["line"]] += now - current["since"]
        if event == "line":
            current["line"], current["since"] = frame.f_lineno, time.perf_counter()
        elif event == "return":  # back in the calling line, if it is generated code too
            caller = frame.f_back
            if caller is not None and caller.f_code.co_filename == source:
                current["line"], current["since"] = caller.f_lineno, time.perf_counter()
            else:
                current.pop("line", None)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == source else None

    sys.settrace(tracer)
    try:
        for _ in range(calls):
            call()
    finally:
        sys.settrace(None)
    return collections.Counter({line: t / calls for line, t in spent.items()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.line_profile",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=list(workloads.TRAINING))
    parser.add_argument("--top", type=int, default=30, help="lines to show")
    parser.add_argument("--calls", type=int, default=5, help="calls timed (after 3 warm-up)")
    args = parser.parse_args(argv)
    call, compiled = workloads.compiled_step(args.workload)
    for _ in range(3):  # trace, compile numba's loops, settle
        call()
    spent = line_times(call, args.calls, compiled.last.generated.fn.__code__.co_filename)
    lines = compiled.code.splitlines()
    print(f"{args.workload}: {sum(spent.values()) * 1e3:.2f} ms a call on traced lines")
    for line, seconds in spent.most_common(args.top):
        print(f"{seconds * 1e3:9.3f} ms  {line:5d}  {lines[line - 1].strip()[:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
