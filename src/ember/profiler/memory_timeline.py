"""``profile.export_memory_timeline``: the bytes tensors hold over a profile's span, as
PyTorch's ``[times, sizes by category]`` plot data (JSON, gzipped JSON) or an HTML plot.

The profile samples :mod:`ember.memory`'s per-device count when its span starts and after
every op, so the timeline moves op by op. Ember does not sort tensors into PyTorch's
categories (parameter, optimizer state, input, temporary, activation, gradient, autograd
detail): every byte is in the last, uncategorised column (PyTorch's grey ``None``).
"""

from __future__ import annotations

import base64
import io
import os
from typing import Any

from ember.backend import device as to_device
from ember.errors import ArgumentError
from ember.profiler.events import write_json

#: PyTorch's categories, in its column order (each row of sizes is [0, *these])
CATEGORIES = ("parameter", "optimizer_state", "input", "temporary", "activation", "gradient",
              "autograd_detail", None)


def coalesce(samples: list[tuple[int, str | None, Any]], start: int,
             devices: set[str]) -> tuple[list[int], list[list[int]]]:
    """``samples`` (see ``profile._memory_samples``) as (times in us from ``start``, sizes by
    category) of the bytes on ``devices`` (the names of one device), one point per time
    where they change (and the first)."""
    times: list[int] = []
    sizes: list[list[int]] = []
    levels: dict[str, int] = {}
    for t, device, n in samples:
        if device is None:  # (a span starts: the bytes per device then)
            levels = {d: n.get(d, 0) for d in devices}
        elif device in devices:
            levels[device] = n
        else:
            continue
        total = sum(levels.values())
        if sizes and sizes[-1][-1] == total:
            continue
        us = max(0, (t - start) // 1000)
        if times and times[-1] == us:
            sizes[-1][-1] = total
            continue
        times.append(us)
        sizes.append([0] * len(CATEGORIES) + [total])
    return times, sizes


def instant_events(samples: list[tuple[int, str | None, Any]], start: int) -> list[dict]:
    """PyTorch's ``[memory]`` instant events of a Chrome trace: one per sample where a
    device's bytes changed, with the change (``Bytes``) and the total after it (``Total
    Allocated``); times in us from ``start``. Bytes held when a span starts (made before it,
    or between two spans of a schedule) make no event."""
    pid, out, last = os.getpid(), [], {}
    for t, device, n in samples:
        if device is None:
            last = dict(n)
            continue
        change, last[device] = n - last.get(device, 0), n
        if change:
            out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t",
                        "name": "[memory]", "pid": pid, "tid": 0,
                        "ts": max(0, t - start) / 1e3,
                        "args": {"Total Reserved": 0, "Total Allocated": n,
                                 "Bytes": change, "Device Type": _device_type(device),
                                 "Device Id": -1 if device == "cpu" else 0}})
    return out


def _same_device(samples: list[tuple[int, str | None, Any]], device: str | None) -> set[str]:
    """The names in ``samples`` of ``device`` (default the CPU; Ember reads ``cpu:0`` as
    ``cpu`` and ``cuda`` as ``cuda:0``); none for a device no tensor of the profile was on, an
    empty timeline as PyTorch's (the CPU's: zeros)."""
    seen: set[str] = set()
    for _, name, n in samples:
        seen.update(n if name is None else (name,))
    want = to_device("cpu" if device is None else device)
    names = {name for name in seen if _key(to_device(name)) == _key(want)}
    return names or ({"cpu"} if want.type == "cpu" else set())


def _key(device: Any) -> tuple[str, int]:
    return device.type, device.index or 0


def _device_type(device: str) -> int:
    """PyTorch's ``DeviceType`` number (CPU 0, CUDA 1) of a device's name."""
    return 0 if device == "cpu" else 1


def export(prof: Any, path: str | os.PathLike, device: str | None) -> None:
    """Writes ``prof``'s timeline to ``path`` (see ``profile.export_memory_timeline``)."""
    name = os.fspath(path)
    if not prof.profile_memory:
        raise ArgumentError("export_memory_timeline: profile_memory=True required for memory "
                            "profiling. Hint: profile(profile_memory=True, ...)")
    if name.endswith("raw.json.gz"):
        raise NotImplementedError(
            "export_memory_timeline: the raw timeline (.raw.json.gz: one event per tensor "
            "created or destroyed) is not supported: Ember samples the bytes op by op. Hint: "
            "a .json or .json.gz path writes [times, sizes by category]")
    devices = _same_device(prof._memory_samples, device)
    times, sizes = coalesce(prof._memory_samples, prof._start, devices) if devices else ([], [])
    if name.endswith(".html"):
        _write_html(name, times, sizes, str(device or "cpu"))
    else:
        write_json(name, [times, sizes])


def _write_html(path: str, times: list[int], sizes: list[list[int]], device: str) -> None:
    """The timeline as a PNG plot (matplotlib) embedded in an HTML page, as PyTorch's."""
    try:
        from matplotlib.figure import Figure  # (not pyplot: the user's backend stays)
    except ImportError:
        raise ImportError("export_memory_timeline: an .html plot needs matplotlib. Hint: pip "
                          "install matplotlib, or write a .json path") from None
    fig = Figure(figsize=(20, 12), dpi=80)
    ax = fig.subplots()
    ax.fill_between([t / 1000 for t in times], [s[-1] / 2 ** 30 for s in sizes],
                    color="grey", alpha=0.4, label="Unknown")
    ax.set_xlabel("Time (ms)")
    ax.set_ylabel("Memory (GB)")
    ax.set_title(f"Memory timeline ({device})")
    ax.legend()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    data = base64.b64encode(png.getvalue()).decode()
    with open(path, "w") as f:
        f.write(f"<html><head><meta charset=\"utf-8\" /><title>GPU Memory Timeline HTML"
                f"</title></head><body><img src='data:image/png;base64,{data}'></body></html>")
