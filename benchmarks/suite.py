"""Runs the workloads side by side (Ember and PyTorch alternating A B A B in one process) and
measures each framework's peak memory in a fresh subprocess of its own.

Peak memory: the subprocess imports one framework, runs the workload once at batch 1 (to load
the code it uses; a compiled step also runs once at full size, since numba compiles its
loops once per process on first use), resets the kernel's peak-RSS mark
(``/proc/self/clear_refs``), builds the workload (model, optimizer, data) and runs two steps;
the figure is the peak resident size minus the size before building. Both frameworks are
measured the same way, so it includes each one's allocator caches and temporaries. For Ember
the tensor-level peak of :mod:`ember.memory` (eager) and the step's working memory as
``tracemalloc`` counts it during two more steps (eager and compiled alike) are reported too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from benchmarks import workloads
from benchmarks.timing import compare, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _set_threads(threads: int) -> None:
    import torch

    import ember

    torch.set_num_threads(threads)
    ember.set_num_threads(threads)


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    """Frees what can be freed (glibc's heap included: freed blocks it keeps would count as
    the next phase's resident memory) and makes the current RSS the peak."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # peak RSS := current RSS
    except OSError:
        pass


def peak_memory(name: str, framework: str, scale: float, threads: int) -> dict[str, int]:
    """In this process: bytes of peak RSS growth while building ``name`` and running 2 steps.
    ``framework`` "ember-jit" runs the step compiled (traced once before the peak is reset)."""
    compiled = framework == "ember-jit"
    framework = "ember" if compiled else framework
    if framework == "ember":
        import ember

        ember.set_num_threads(threads)
        ember.memory.enable()
        ember.backend.compiled.preload()  # numba's code, loaded on first use, is not workload
    else:
        import torch

        torch.set_num_threads(threads)
    # one step at batch 1 first, so the code pages each framework loads on first use (BLAS,
    # oneDNN kernels) are resident before the baseline and not counted as workload memory
    warm, _ = workloads.build(name, framework, 1 / workloads.TRAINING[name].batch)
    warm()
    if compiled:  # numba compiles the compiled step's loops once per process, on first use
        warm, _ = workloads.build(name, framework, scale)
        warm = ember.jit.compile(warm)
        warm(), warm()
    del warm, _
    _reset_peak()
    base = _rss_kib("VmRSS")
    step, _model = workloads.build(name, framework, scale)
    if compiled:
        import ember

        step = ember.jit.compile(step)
        step()  # the trace runs eagerly and keeps every value: not what a compiled step holds
        _reset_peak()
    for _ in range(2):
        step()
    out = {"rss_peak": (_rss_kib("VmHWM") - base) * 1024}
    if framework == "ember":  # (compiled code holds plain arrays: ember.memory misses them)
        import ember

        if not compiled:
            out["tensor_peak"] = ember.memory.max_allocated()
        ember.memory.disable()  # leave no tracking behind when called in-process (tests)
        out["step_peak"] = _step_peak(step)
    return out


def _step_peak(step: Any) -> int:
    """Peak bytes that NumPy and Python allocate while ``step`` runs twice more, above what
    they held before (``tracemalloc``, which sees every NumPy array): a step's working
    memory, without the model and optimizer state, and without the allocator's fragmentation
    and caches that make RSS move by ±10 MiB from run to run."""
    import tracemalloc

    tracemalloc.start()
    try:
        for _ in range(2):
            step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_peak(name: str, framework: str, scale: float, threads: int) -> dict[str, int]:
    """Runs :func:`peak_memory` in a fresh interpreter (so neither framework sees the other)."""
    cmd = [sys.executable, "-m", "benchmarks.suite", name, framework, str(scale), str(threads)]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_training(name: str, quick: bool, threads: int, memory: bool) -> dict[str, Any]:
    """Times one training/inference workload; returns its row."""
    spec = workloads.TRAINING[name]
    scale = 1.0
    e_step, e_model = workloads.build(name, "ember", scale)
    weights = {k: v.numpy() for k, v in e_model.state_dict().items()}
    t_step, _ = workloads.build(name, "torch", scale, weights)
    if spec.train:
        repeats, calls, warmup = (3, 1, 1) if quick else (7, 1, 2)
        if name in ("mlp", "cnn"):
            calls = 2 if quick else 5
    else:
        repeats, calls, warmup = (3, 50, 5) if quick else (7, 200, 20)
    samples = compare({"ember": e_step, "torch": t_step}, calls, repeats, warmup)
    flops = workloads.step_flops(name, scale)
    row = _row(name, samples, flops)
    if memory and spec.train:
        row["memory"] = {fw: measure_peak(name, fw, scale, threads) for fw in ("ember", "torch")}
    return row


def run_ops(quick: bool) -> list[dict[str, Any]]:
    """Per-op eager overhead on tiny tensors (forward, and forward + backward)."""
    from benchmarks.core_ops import _tiny_cases

    calls, repeats = (200, 3) if quick else (2000, 7)
    rows = []
    for case, (e, t) in _tiny_cases().items():
        rows.append(_row(f"ops: {case}", compare({"ember": e, "torch": t}, calls, repeats)))
    return rows


def run_gemm(quick: bool) -> dict[str, Any]:
    n = 1024 if quick else 2048
    fns = {fw: workloads.gemm(fw, n) for fw in ("ember", "torch")}
    row = _row(f"gemm {n}³", compare(fns, 1 if quick else 3, 3 if quick else 7, 1), 2 * n ** 3)
    return row


def run_membw(quick: bool) -> dict[str, Any]:
    nbytes = 2 ** 28 if quick else 2 ** 30
    fns = {fw: workloads.membw(fw, nbytes) for fw in ("ember", "torch")}
    row = _row(f"membw {nbytes >> 20} MiB copy", compare(fns, 1, 3 if quick else 7, 1))
    for fw in ("ember", "torch"):
        row[fw]["GB/s"] = 2 * nbytes / row[fw]["median"] / 1e9  # read + write
    return row


def _row(name: str, samples: dict, flops: int | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"workload": name}
    for fw in ("ember", "torch"):
        med, lo, hi = summary(samples[fw])
        row[fw] = {"median": med, "min": lo, "max": hi}
        if flops:
            row[fw]["GFLOP/s"] = flops / med / 1e9
    row["ratio"] = row["ember"]["median"] / row["torch"]["median"]
    if flops:
        row["flops"] = flops
    return row


def run(names: list[str], quick: bool = False, threads: int = 2, memory: bool = True,
        log: Any = None) -> dict[str, Any]:
    """Runs the named workloads (all by default) and returns ``{"rows": …, "machine": …}``."""
    _set_threads(threads)
    names = names or list(workloads.ALL)
    unknown = [n for n in names if n not in workloads.ALL]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; choose from {list(workloads.ALL)}")
    rows: list[dict[str, Any]] = []
    # the ceilings first: MFU needs the GEMM rate
    order = [n for n in workloads.CEILINGS if n in names] + \
        [n for n in names if n not in workloads.CEILINGS]
    for name in order:
        if log:
            log(f"running {name} …")
        if name == "gemm":
            rows.append(run_gemm(quick))
        elif name == "membw":
            rows.append(run_membw(quick))
        elif name == "ops":
            rows.extend(run_ops(quick))
        else:
            rows.append(run_training(name, quick, threads, memory))
        if log:  # a partial run still leaves its numbers
            log(f"  {name}: ember {rows[-1]['ember']['median']:.4g} s, torch "
                f"{rows[-1]['torch']['median']:.4g} s, ratio {rows[-1]['ratio']:.2f}")
    peak = max((r[fw]["GFLOP/s"] for r in rows if r["workload"].startswith("gemm")
                for fw in ("ember", "torch")), default=None)
    if peak:
        for r in rows:
            if "flops" in r and not r["workload"].startswith("gemm"):
                for fw in ("ember", "torch"):
                    r[fw]["MFU"] = r[fw]["GFLOP/s"] / peak
    return {"rows": rows, "machine": machine(threads), "quick": quick, "gemm_peak": peak}


def machine(threads: int) -> dict[str, Any]:
    import platform

    import numpy
    import torch

    import ember

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads,
            "python": platform.python_version(), "numpy": numpy.__version__,
            "torch": torch.__version__, "ember": ember.__version__,
            "blas": " + ".join(_blas_name(lib) for lib in ember.backend.blas_info())}


def _blas_name(lib: dict) -> str:
    """``openblas 0.3.31 (SkylakeX kernels)``, and the environment variable that chose them
    when one did (some hosts pin an older core type: its kernels are slower)."""
    notes = [f"{lib['architecture']} kernels"] if lib.get("architecture") else []
    pinned = os.environ.get("OPENBLAS_CORETYPE") if lib["internal_api"] == "openblas" else None
    notes += [f"OPENBLAS_CORETYPE={pinned}"] if pinned else []
    return f"{lib['internal_api']} {lib['version']}" + (f" ({', '.join(notes)})" if notes else "")


if __name__ == "__main__":  # the peak-memory subprocess: name framework scale threads
    _name, _fw, _scale, _threads = sys.argv[1:5]
    print(json.dumps(peak_memory(_name, _fw, float(_scale), int(_threads))))
