"""``python -m benchmarks.func [--quick] [case …]``: ``ember.func`` Jacobians against
``torch.func`` on the same work, in one run (alternating after warm-up, median of repeats),
with the ratio Ember/PyTorch. Float32 on the CPU; the cases: ``jacrev`` of a dict of 8, 16 and
32 scalar losses, of a 256-vector output, of a scalar (a gradient) and of a small MLP;
``jacfwd`` of the MLP and ``hessian`` of a scalar.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch
import torch.func

import ember
import ember.func
from benchmarks.timing import compare, fmt_time, summary


def _weights(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    w = np.random.default_rng(seed).standard_normal((rows, cols)) / np.sqrt(cols)
    return w.astype(np.float32)


def _both(make: Callable, *arrays: np.ndarray) -> tuple:
    """``make(lib, func_lib, *tensors)`` for Ember and for PyTorch: two calls to time."""
    return tuple(make(lib, fn, *(lib.from_numpy(a) for a in arrays))
                 for lib, fn in ((ember, ember.func), (torch, torch.func)))


def _losses(leaves: int, inputs: int = 64) -> tuple:
    """jacrev of ``leaves`` scalar losses in a dict (each a sum over a shared hidden layer)."""
    def make(lib: object, fn: object, w: object, x: object) -> Callable:
        def f(x: object) -> dict:
            h = (w @ x).tanh()
            return {f"l{i}": (h[i] * h).sum() for i in range(leaves)}
        return lambda: fn.jacrev(f)(x)
    return _both(make, _weights(leaves, inputs), np.ones(inputs, np.float32))


def _vector(outputs: int, inputs: int) -> tuple:
    """jacrev of a ``outputs``-vector of ``inputs`` inputs: ``tanh(W @ x) * x[0]``."""
    def make(lib: object, fn: object, w: object, x: object) -> Callable:
        return lambda: fn.jacrev(lambda x: (w @ x).tanh() * x[0])(x)
    return _both(make, _weights(outputs, inputs), np.ones(inputs, np.float32))


def _mlp(transform: str, width: int = 10) -> tuple:
    """``transform`` of a two-layer tanh MLP, ``width`` -> ``width``."""
    def make(lib: object, fn: object, w1: object, w2: object, x: object) -> Callable:
        f = getattr(fn, transform)
        return lambda: f(lambda x: w2 @ (w1 @ x).tanh())(x)
    return _both(make, _weights(32, width), _weights(width, 32, 1), np.ones(width, np.float32))


def _scalar(transform: str, inputs: int) -> tuple:
    """``transform`` of ``sum(sin(x) * x)`` over ``inputs`` inputs."""
    def make(lib: object, fn: object, x: object) -> Callable:
        f = getattr(fn, transform)
        return lambda: f(lambda x: (x.sin() * x).sum())(x)
    return _both(make, np.linspace(-1, 1, inputs, dtype=np.float32))


CASES: dict[str, Callable[[], tuple]] = {
    "jacrev dict 8": lambda: _losses(8),
    "jacrev dict 16": lambda: _losses(16),
    "jacrev dict 32": lambda: _losses(32),
    "jacrev 64->256": lambda: _vector(256, 64),
    "jacrev 1000->1": lambda: _scalar("jacrev", 1000),
    "jacrev mlp 10": lambda: _mlp("jacrev"),
    "jacfwd mlp 10": lambda: _mlp("jacfwd"),
    "hessian 100": lambda: _scalar("hessian", 100),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    repeats = 3 if args.quick else 9
    print(f"{'case':<16} {'ember':>10} {'torch':>10} {'ember/torch':>12}")
    for name in args.cases or CASES:
        e, t = CASES[name]()
        s = compare({"ember": e, "torch": t}, calls=5, repeats=repeats, least=0.05)
        me, mt = summary(s["ember"])[0], summary(s["torch"])[0]
        print(f"{name:<16} {fmt_time(me):>10} {fmt_time(mt):>10} {me / mt:>11.2f}×", flush=True)


if __name__ == "__main__":
    main()
