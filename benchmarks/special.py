"""``python -m benchmarks.special [--quick]``: special functions, distribution cdfs and
elementwise ops that have numba passes of their own, Ember against PyTorch in one run
(alternating after warm-up, median of repeats), with the ratio Ember/PyTorch: float32 erfc,
erf, erfinv, lgamma and ``Normal.cdf``, float64 ``Cauchy.cdf``, float32 softplus, hardshrink,
softshrink, sign, fmod, remainder, hypot, copysign and logaddexp, at 1e5 values.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch

import ember
from benchmarks.timing import compare, fmt_time, summary


def _pair(name: str, dtype: str, low: float, high: float, n: int) -> tuple:
    """Ember's and PyTorch's ``name`` (a dotted path under each library) of the same ``n``
    uniform values in [low, high)."""
    x = np.random.default_rng(0).uniform(low, high, n).astype(dtype)
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)

    def resolve(lib: object) -> Callable:
        fn = lib
        for part in name.split("."):
            fn = getattr(fn, part)
        return fn
    ember_fn, torch_fn = resolve(ember), resolve(torch)
    return (lambda: ember_fn(ex)), (lambda: torch_fn(tx))


def _binary(name: str, n: int) -> tuple:
    """Ember's and PyTorch's ``name`` of ``n`` normal float32 values (times 10) and ``n``
    divisors of either sign, magnitude in [0.5, 3)."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    y = (rng.uniform(0.5, 3, n) * rng.choice([-1, 1], n)).astype(np.float32)
    return tuple(lambda lib=lib: getattr(lib, name)(lib.from_numpy(x), lib.from_numpy(y))
                 for lib in (ember, torch))


def _cdf(family: str, dtype: str, low: float, high: float, n: int) -> tuple:
    """``family(0, 1).cdf`` of ``n`` uniform values in [low, high) in both libraries."""
    x = np.random.default_rng(1).uniform(low, high, n).astype(dtype)
    out = []
    for lib in (ember, torch):
        zero, one = (lib.tensor(v, dtype=getattr(lib, dtype)) for v in (0.0, 1.0))
        d = getattr(lib.distributions, family)(zero, one, validate_args=False)
        t = lib.from_numpy(x)
        out.append(lambda d=d, t=t: d.cdf(t))
    return tuple(out)


def cases(n: int) -> dict[str, tuple]:
    return {
        "erfc f32": _pair("special.erfc", "float32", -10, 10, n),
        "erf f32": _pair("special.erf", "float32", -5, 5, n),
        "erfinv f32": _pair("special.erfinv", "float32", -1, 1, n),
        "lgamma f32": _pair("lgamma", "float32", 0.1, 10, n),
        "Normal.cdf f32": _cdf("Normal", "float32", -10, 10, n),
        "Cauchy.cdf f64": _cdf("Cauchy", "float64", -100, 100, n),
        "softplus f32": _pair("nn.functional.softplus", "float32", -10, 10, n),
        "hardshrink f32": _pair("nn.functional.hardshrink", "float32", -2, 2, n),
        "softshrink f32": _pair("nn.functional.softshrink", "float32", -2, 2, n),
        "sign f32": _pair("sign", "float32", -2, 2, n),
        **{f"{name} f32": _binary(name, n) for name in ("fmod", "remainder", "hypot",
                                                          "copysign", "logaddexp")},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (1)")
    parser.add_argument("--n", type=int, default=100_000, help="values per call (1e5)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    repeats = 3 if args.quick else 7
    print(f"{'case':<16} {'ember':>10} {'torch':>10} {'ember/torch':>12}")
    for name, (e, t) in cases(args.n).items():
        s = compare({"ember": e, "torch": t}, calls=20, repeats=repeats, least=0.05)
        me, mt = summary(s["ember"])[0], summary(s["torch"])[0]
        print(f"{name:<16} {fmt_time(me):>10} {fmt_time(mt):>10} {me / mt:>11.2f}×")


if __name__ == "__main__":
    main()
