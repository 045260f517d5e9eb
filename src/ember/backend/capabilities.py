"""What a device can do, asked once and answered as a typed record.

Kernels choose by capability, not by device name: a GEMM in a dtype the device has no fast
path for (bfloat16 and float16 on NumPy) is computed in float32 and cast back, see
:func:`compute_dtype`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache

from ember import dtypes
from ember.backend import compiled
from ember.backend.device import Device, device
from ember.backend.threads import blas_info, cpu_count, get_num_threads
from ember.dtypes import DType


@dataclass(frozen=True)
class Capabilities:
    """A device's capability report (see :func:`capabilities`)."""

    device: Device
    dtypes_stored: tuple[DType, ...]
    fast_dtypes: dict[str, tuple[DType, ...]] = field(repr=False)
    blas: str
    blas_threads: int
    simd: str
    cores: int
    memory_bytes: int
    memory_available_bytes: int

    def computes_fast(self, dtype: DType, kind: str = "gemm") -> bool:
        """Whether kernels of ``kind`` ("gemm", "elementwise") run natively in ``dtype``."""
        return dtype in self.fast_dtypes.get(kind, ())

    def report(self) -> str:
        """A human-readable multi-line summary (what ``ember info`` prints)."""
        fast = "; ".join(f"{kind}: {', '.join(d.name for d in ds)}"
                         for kind, ds in self.fast_dtypes.items())
        gib = 1024 ** 3
        return "\n".join([
            f"device:      {self.device}",
            f"dtypes:      {', '.join(d.name for d in self.dtypes_stored)}",
            f"fast dtypes: {fast} (others are stored natively, computed in float32)",
            f"BLAS:        {self.blas}, {self.blas_threads} threads",
            f"SIMD:        {self.simd}",
            f"kernels:     {compiled.describe()}",
            f"cores:       {self.cores}",
            f"memory:      {self.memory_bytes / gib:.1f} GiB total, "
            f"{self.memory_available_bytes / gib:.1f} GiB available",
        ])


_SIMD_ORDER = ("AVX512_SPR", "AVX512_ICL", "AVX512_SKX", "AVX512F", "AVX2", "AVX", "SSE42",
               "SSE41", "ASIMDHP", "ASIMD", "NEON", "VSX")


def _simd_level() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as feats
    for name in _SIMD_ORDER:
        if feats.get(name):
            return name
    return "none"


def _memory() -> tuple[int, int]:
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
        return info["MemTotal"], info.get("MemAvailable", info["MemFree"])
    except (OSError, KeyError, ValueError):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return total, total


def _blas_name() -> str:
    libs = blas_info()
    if not libs:
        return "unknown"
    lib = libs[0]
    extra = f" ({lib['architecture']})" if lib.get("architecture") else ""
    return f"{lib['internal_api']} {lib['version']}{extra}"


@cache
def _static(dev: Device) -> tuple:
    fast = {"gemm": (dtypes.float32, dtypes.float64),
            "elementwise": (dtypes.float32, dtypes.float64, dtypes.float16)}
    return dtypes.ALL_DTYPES, fast, _blas_name(), _simd_level()


def capabilities(dev: str | Device | None = None) -> Capabilities:
    """Reports what ``dev`` can hold and compute fast, its BLAS, SIMD, cores and memory.

    Example:
        >>> caps = ember.backend.capabilities("cpu")
        >>> caps.computes_fast(ember.bfloat16)
        False
    """
    dev = device(dev)
    stored, fast, blas, simd = _static(dev)
    total, available = _memory()
    return Capabilities(dev, stored, fast, blas, get_num_threads(), simd, cpu_count(),
                        total, available)


@cache
def compute_dtype(dev: Device, dtype: DType, kind: str = "gemm") -> DType:
    """The dtype a kernel of ``kind`` computes in for ``dtype`` on ``dev``.

    ``dtype`` itself where the device is fast in it; otherwise float32 (results are cast back).

    Example:
        >>> ember.backend.compute_dtype(ember.device("cpu"), ember.bfloat16)
        ember.float32
    """
    _, fast, _, _ = _static(dev)
    if dtype in fast.get(kind, ()) or not dtype.is_floating_point:
        return dtype
    return dtypes.float32
