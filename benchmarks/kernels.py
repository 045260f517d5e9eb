"""``python -m benchmarks.kernels [--quick]``: the ops that have numba kernels, each timed three
ways in one run — Ember with numba, Ember with its NumPy twin (``use_numba(False)``), PyTorch —
alternating after warm-up (median of repeats), with the ratios numba/NumPy and numba/PyTorch.

Each case is a forward and backward (or an optimizer step, or a bias gradient's column sums)
at a shape of the benchmark models:
gpt's attention scores (also causally masked), its logits' log_softmax, layer norms (with
weight and bias), MLP activations, token embedding and a bias's gradient (column sums); its and
resnet18's parameters as a few large tensors, and gpt's and mlp's own lists of parameters;
resnet18's stride-2 input gradient and a stride-1 3×3 convolution (Winograd's with numba,
im2col's without); cnn's first 2×2 max pooling (channels-last, as its convolution leaves it),
also without gradient (inference: the values alone); a 2-layer LSTM and GRU (the scan's
backward steps).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch

import ember
import ember.models
import ember.nn.functional as F
from benchmarks.timing import compare, fmt_time, summary
from ember.backend import compiled


def _channels_last(a: np.ndarray) -> np.ndarray:
    """The same (N, C, *spatial) values laid out channels-last, as a CNN's activations are."""
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 1, -1)), -1, 1)


def _backward(ember_fn: Callable, torch_fn: Callable, shape: tuple, seed: int,
              out_shape: tuple | None = None, channels_last: bool = False) -> tuple:
    """Forward and backward of each function at a random float32 input of ``shape`` (the
    cotangent: of ``out_shape``, by default the same), both laid out channels-last if asked
    (as a CNN's activations are)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(out_shape or shape).astype(np.float32)
    if channels_last:
        x, g = _channels_last(x), _channels_last(g)
    ex = ember.from_numpy(x.copy(order="K")).requires_grad_()  # (order K: the same layout)
    tx = torch.from_numpy(x).requires_grad_()
    eg, tg = ember.from_numpy(g), torch.from_numpy(g.copy(order="K"))
    return (lambda: ember_fn(ex).backward(eg)), (lambda: torch_fn(tx).backward(tg))


def _affine_layer_norm(width: int) -> tuple:
    """Layer norm over the last ``width`` values with a weight and bias that take gradients
    (``nn.LayerNorm``'s), in Ember and in PyTorch."""
    def make(lib: object, fn: Callable) -> Callable:
        rng = np.random.default_rng(5)
        w, b = (lib.from_numpy(rng.standard_normal(width).astype(np.float32)).requires_grad_()
                for _ in range(2))
        return lambda x: fn(x, (width,), w, b)
    return make(ember, F.layer_norm), make(torch, torch.nn.functional.layer_norm)


def _embedding(batch: tuple, vocab: int, width: int) -> tuple:
    """A lookup of random token ids of shape ``batch`` in a (vocab, width) weight that takes
    gradients, and its backward (the weight's gradient: rows added at the ids)."""
    rng = np.random.default_rng(6)
    ids = rng.integers(0, vocab, batch)
    return _backward(lambda weight: F.embedding(ember.from_numpy(ids), weight),
                     lambda weight: torch.nn.functional.embedding(torch.from_numpy(ids), weight),
                     (vocab, width), 7, batch + (width,))


def _column_sums(rows: int, width: int) -> tuple:
    """The sum over the rows of a (rows, width) array: a bias's gradient."""
    a = np.random.default_rng(8).standard_normal((rows, width)).astype(np.float32)
    ea, ta = ember.from_numpy(a), torch.from_numpy(a)
    return (lambda: ea.sum(0)), (lambda: ta.sum(0))


def _causal_softmax(n: int) -> tuple:
    """Softmax over the last dimension with gpt's causal mask (-inf above the diagonal of the
    last two ``n``-wide dimensions: half the row's ``exp`` are of -inf), Ember and PyTorch."""
    above = np.triu(np.ones((n, n), bool), 1)

    def make(lib: object) -> Callable:
        mask = lib.from_numpy(above)
        return lambda x: lib.softmax(x.masked_fill(mask, float("-inf")), -1)
    return make(ember), make(torch)


def _steps(name: str, shapes: list[tuple], **options: float) -> tuple:
    """An optimizer step over parameters of ``shapes``, with gradients set once."""
    def make(lib: object) -> Callable[[], object]:
        rng = np.random.default_rng(0)
        params = []
        for shape in shapes:
            p = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
            p.requires_grad_()
            p.grad = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
            params.append(p)
        return getattr(lib.optim, name)(params, **options).step
    return make(ember), make(torch)


def _recurrent(kind: str) -> tuple:
    """A 2-layer LSTM or GRU (input 128, hidden 256) on (50, 32, 128) steps, forward and
    backward of its output, both frameworks with the same weights."""
    t = getattr(torch.nn, kind)(128, 256, num_layers=2)
    e = getattr(ember.nn, kind)(128, 256, num_layers=2)
    e.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    return _backward(lambda x: e(x)[0], lambda x: t(x)[0], (50, 32, 128), 9, (50, 32, 256))


def _conv(stride: int) -> tuple:
    """resnet18's 64 → 128 (stride 2: its input gradient) or 64 → 64 (stride 1: Winograd's
    forward and input gradient) 3×3 convolution of (32, 64, 32, 32)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64 * stride, 64, 3, 3)).astype(np.float32) * 0.05
    ew, tw = ember.from_numpy(w), torch.from_numpy(w)
    out = (32, 64 * stride, 32 // stride, 32 // stride)
    return _backward(lambda x: F.conv2d(x, ew, stride=stride, padding=1),
                     lambda x: torch.nn.functional.conv2d(x, tw, stride=stride, padding=1),
                     (32, 64, 32, 32), 4, out, channels_last=True)


def _max_pool_values(shape: tuple) -> tuple:
    """2×2 max pooling of a channels-last float32 ``shape`` without gradient (inference)."""
    x = _channels_last(np.random.default_rng(7).standard_normal(shape).astype(np.float32))
    ex, tx = ember.from_numpy(x), torch.from_numpy(x)

    def ember_fn() -> None:
        with ember.no_grad():
            F.max_pool2d(ex, 2)

    def torch_fn() -> None:
        with torch.no_grad():
            torch.nn.functional.max_pool2d(tx, 2)
    return ember_fn, torch_fn


def cases() -> dict[str, tuple]:
    """name -> (Ember's step, PyTorch's step)."""
    gpt_params = [(32768, 256), (256, 768), (256, 256), (256, 1024), (1024, 256)]
    resnet_params = [(512, 512, 3, 3)] * 4 + [(256, 256, 3, 3)] * 4 + [(128, 128, 3, 3)] * 4
    # the benchmark models' own parameters: many small tensors (biases, layer norms) among
    # the matrices, as the training steps of benchmarks.jit update them
    gpt_own, mlp_own = ([tuple(p.shape) for p in model().parameters()]
                        for model in (ember.models.gpt, ember.models.mlp))

    def millions(shapes: list[tuple]) -> str:
        return f"{sum(int(np.prod(s)) for s in shapes) / 1e6:.1f}M parameters"
    return {
        "softmax fwd+bwd (16,4,128,128)": _backward(
            lambda x: ember.softmax(x, dim=-1), lambda x: torch.softmax(x, -1),
            (16, 4, 128, 128), 0),
        "causal softmax fwd+bwd (16,4,128,128)": _backward(*_causal_softmax(128),
                                                           (16, 4, 128, 128), 0),
        "log_softmax fwd+bwd (2048,256)": _backward(
            lambda x: ember.log_softmax(x, dim=-1), lambda x: torch.log_softmax(x, -1),
            (2048, 256), 6),
        "layer_norm fwd+bwd (16,128,256)": _backward(*_affine_layer_norm(256), (16, 128, 256), 1),
        "gelu fwd+bwd (2048,1024)": _backward(F.gelu, torch.nn.functional.gelu, (2048, 1024), 2),
        "embedding fwd+bwd (16,128) ids, (256,256)": _embedding((16, 128), 256, 256),
        "bias gradient: column sums of (2048,1024)": _column_sums(2048, 1024),
        "conv stride-2 fwd+bwd (32,64,32,32)": _conv(2),
        "conv 3×3 fwd+bwd (32,64,32,32), Winograd": _conv(1),
        "max_pool 2×2 fwd+bwd (128,32,28,28)": _backward(
            lambda x: F.max_pool2d(x, 2), lambda x: torch.nn.functional.max_pool2d(x, 2),
            (128, 32, 28, 28), 8, (128, 32, 14, 14), channels_last=True),
        "max_pool 2×2 no grad (128,32,28,28)": _max_pool_values((128, 32, 28, 28)),
        "LSTM 2 layers h256 fwd+bwd (50,32,128)": _recurrent("LSTM"),
        "GRU 2 layers h256 fwd+bwd (50,32,128)": _recurrent("GRU"),
        f"AdamW step ({millions(gpt_params)})": _steps("AdamW", gpt_params, lr=3e-4),
        f"SGD momentum step ({millions(resnet_params)})": _steps(
            "SGD", resnet_params, lr=0.01, momentum=0.9),
        f"AdamW step, gpt's {len(gpt_own)} tensors ({millions(gpt_own)})": _steps(
            "AdamW", gpt_own, lr=3e-4),
        f"SGD momentum step, mlp's {len(mlp_own)} tensors ({millions(mlp_own)})": _steps(
            "SGD", mlp_own, lr=0.01, momentum=0.9),
    }


def _with_numba(fn: Callable[[], object], on: bool) -> Callable[[], object]:
    def run() -> None:
        compiled.use_numba(on)
        try:
            fn()
        finally:
            compiled.use_numba(True)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    if not compiled.numba_enabled():
        raise SystemExit("benchmarks.kernels: numba is off or missing (pip install '.[fast]')")
    calls, repeats = (3, 3) if args.quick else (10, 7)
    print(f"# Ember {ember.__version__}, PyTorch {torch.__version__}, {args.threads} threads")
    print("| case | Ember, numba | Ember, NumPy | PyTorch | numba/NumPy | numba/PyTorch |")
    print("|---|---|---|---|---|---|")
    for name, (ember_fn, torch_fn) in cases().items():
        if args.only not in name:
            continue
        s = compare({"numba": _with_numba(ember_fn, True), "numpy": _with_numba(ember_fn, False),
                     "torch": torch_fn}, calls, repeats)
        med = {k: summary(v)[0] for k, v in s.items()}
        print(f"| {name} | {fmt_time(med['numba'])} | {fmt_time(med['numpy'])} | "
              f"{fmt_time(med['torch'])} | {med['numba'] / med['numpy']:.2f} | "
              f"{med['numba'] / med['torch']:.2f} |")


if __name__ == "__main__":
    main()
