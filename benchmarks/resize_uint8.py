"""``python -m benchmarks.resize_uint8 [--quick]``: uint8 image resizing (``F.interpolate`` of
uint8, the kernels behind v2's ``resize``), bilinear and bicubic, antialiased or not, at
224→112 and 500→224, one image and a batch of 16, 3 channels: Ember with numba, Ember with its
NumPy twin (``use_numba(False)``) and PyTorch (one thread), alternating in one run, median of
the repeats, with the ratios to PyTorch. Ember's bytes equal PyTorch's (checked here). Where
numba is off (``EMBER_NUMBA=0``) or not installed, the numba column is left out."""

from __future__ import annotations

import argparse

import numpy as np
import torch

import ember
import ember.nn.functional as F
from benchmarks.timing import compare, fmt_time, summary
from ember.backend import compiled


def _case(batch: int, size: int, out: int, mode: str, antialias: bool, repeats: int) -> str:
    x = np.random.default_rng(size + out).integers(0, 256, (batch, 3, size, size), np.uint8)
    ex, tx = ember.tensor(x), torch.from_numpy(x)

    def ember_fn() -> object:
        return F.interpolate(ex, size=(out, out), mode=mode, antialias=antialias)

    def torch_fn() -> object:
        return torch.nn.functional.interpolate(tx, size=(out, out), mode=mode,
                                               antialias=antialias)

    def numpy_fn() -> object:
        saved = compiled.numba_enabled()  # (restored as it was: EMBER_NUMBA=0 stays off)
        compiled.use_numba(False)
        try:
            return ember_fn()
        finally:
            compiled.use_numba(saved)

    fns = {"numba": ember_fn} if compiled.numba_enabled() else {}
    fns.update(numpy=numpy_fn, torch=torch_fn)
    for name, fn in fns.items():
        assert name == "torch" or np.array_equal(fn().numpy(), torch_fn().numpy())
    times = compare(fns, calls=1, repeats=repeats, least=0.02)
    med = {k: summary(v)[0] for k, v in times.items()}
    cells = [f"{k} {fmt_time(med[k]):>9s} ({med[k] / med['torch']:5.1f}x)" for k in fns
             if k != "torch"]
    return (f"{batch:3d}x3x{size}->{out} {mode:8s} aa={antialias!s:5s}  " + "  ".join(cells)
            + f"  torch {fmt_time(med['torch']):>9s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not compiled.numba_enabled():
        print("numba is off or not installed: Ember's NumPy kernels only", flush=True)
    repeats = 3 if args.quick else 7
    batches = (1,) if args.quick else (1, 16)
    for batch in batches:
        for size, out in ((224, 112), (500, 224)):
            for mode in ("bilinear", "bicubic"):
                for antialias in (True, False):
                    print(_case(batch, size, out, mode, antialias, repeats), flush=True)


if __name__ == "__main__":
    main()
