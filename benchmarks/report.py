"""The benchmark results as a Markdown table (printed on the terminal and written to a file)."""

from __future__ import annotations

from typing import Any

from benchmarks.timing import fmt_time

TARGETS = {"mlp": 1.2, "cnn": 1.5, "resnet18": 1.5, "gpt": 1.3, "gpt_sdpa": 1.3,
           "infer_mlp_b1": 3.0, "infer_cnn_b1": 3.0}


def _mib(n: Any) -> str:
    return f"{n / 2 ** 20:.0f} MiB" if isinstance(n, (int, float)) else "–"


def _cell(r: dict) -> str:
    return f"{fmt_time(r['median'])} ({fmt_time(r['min'])}–{fmt_time(r['max'])})"


def _rate(r: dict) -> str:
    if "GB/s" in r:
        return f"{r['GB/s']:.1f} GB/s"
    if "GFLOP/s" not in r:
        return "–"
    mfu = f", {100 * r['MFU']:.0f} %" if "MFU" in r else ""
    return f"{r['GFLOP/s']:.1f}{mfu}"


def markdown(result: dict[str, Any]) -> str:
    """One row per workload: times, ratio (with the target), GFLOP/s and MFU, peak memory."""
    m = result["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores; {m['threads']} threads each; "
             f"Python {m['python']}, NumPy {m['numpy']} (BLAS {m.get('blas', '?')}), "
             f"PyTorch {m['torch']}, "
             f"Ember {m['ember']}{' (--quick)' if result['quick'] else ''}.", "",
             "| workload | Ember median (min–max) | PyTorch median (min–max) | Ember/PyTorch "
             "(target) | GFLOP/s, MFU Ember | GFLOP/s, MFU PyTorch | peak mem Ember (tensors) "
             "| peak mem PyTorch | mem ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        name = r["workload"]
        target = TARGETS.get(name)
        ratio = f"{r['ratio']:.2f}" + (f" (≤ {target})" if target else "")
        mem = r.get("memory", {})
        e_mem, t_mem = mem.get("ember", {}), mem.get("torch", {})
        e_peak, t_peak = e_mem.get("rss_peak"), t_mem.get("rss_peak")
        e_cell = (f"{_mib(e_peak)} ({_mib(e_mem.get('tensor_peak'))})" if e_peak is not None
                  else "–")
        mem_ratio = f"{e_peak / t_peak:.2f}" if e_peak and t_peak else "–"
        lines.append(f"| {name} | {_cell(r['ember'])} | {_cell(r['torch'])} | {ratio} | "
                     f"{_rate(r['ember'])} | {_rate(r['torch'])} | {e_cell} | {_mib(t_peak)} | "
                     f"{mem_ratio} |")
    if result.get("gemm_peak"):
        lines += ["", f"MFU is against the measured GEMM rate, {result['gemm_peak']:.1f} GFLOP/s "
                      "(the faster framework's fp32 GEMM)."]
    return "\n".join(lines) + "\n"
