"""Per-op eager overhead and large matmul, Ember vs PyTorch (the core issue's benchmark).

Run: ``python -m benchmarks.core_ops`` (add ``--quick`` for a short run). Prints, per case,
the median time per call of each framework (min–max over repeats) and the ratio Ember/PyTorch.
The flex_attention rows time Ember's block-sparse causal flex_attention against PyTorch's (eager
and, as its default does on CPU, compiled) and against Ember's own dense attention (the
baseline column then holds the Ember function the case names).
"""

from __future__ import annotations

import argparse
import json
import platform
import warnings

import numpy as np
import torch

import ember
import ember.nn.functional as F
from benchmarks.timing import compare, fmt_time, summary
from ember.nn.attention.flex_attention import create_block_mask, flex_attention

TINY = (4, 4)
# the flex_attention rows' baselines: contender -> what the row names
FLEX_BASELINES = {"torch eager": "PyTorch eager flex_attention",
                  "torch compiled": "PyTorch compiled flex_attention",
                  "ember sdpa": "Ember dense sdpa is_causal",
                  "ember no mask": "Ember flex_attention without mask"}


def _tiny_cases() -> dict[str, tuple]:
    """name -> (ember fn, torch fn) over tiny tensors; '+bwd' cases also run backward."""
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal(TINY, dtype=np.float32), rng.standard_normal(TINY,
                                                                                  dtype=np.float32)
    ea, eb = ember.from_numpy(a_np.copy()), ember.from_numpy(b_np.copy())
    ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
    ga, gb = (ember.from_numpy(a_np.copy()).requires_grad_(),
              ember.from_numpy(b_np.copy()).requires_grad_())
    tga, tgb = (torch.from_numpy(a_np.copy()).requires_grad_(),
                torch.from_numpy(b_np.copy()).requires_grad_())
    ops = {
        "add": (lambda x, y: x + y),
        "mul": (lambda x, y: x * y),
        "matmul": (lambda x, y: x @ y),
        "relu": (lambda x, y: x.relu()),
        "sum": (lambda x, y: x.sum()),
    }
    cases = {}
    for name, op in ops.items():
        cases[name] = (lambda op=op: op(ea, eb), lambda op=op: op(ta, tb))

        def e_step(op=op):
            op(ga, gb).sum().backward()

        def t_step(op=op):
            op(tga, tgb).sum().backward()

        cases[name + " +bwd"] = (e_step, t_step)
    for name, make in _CALLS.items():
        cases[name] = (make(ember, ea, eb), make(torch, ta, tb))
    return cases


def _optimizer_step(m, x, y):
    """One Adam step over a 4-4-4 MLP's four small parameters (gradients preset)."""
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(4, 4), m.nn.ReLU(), m.nn.Linear(4, 4))
    for p in net.parameters():
        p.grad = m.ones_like(p)
    return m.optim.Adam(net.parameters(), lr=1e-3).step


def _cross_entropy(m, x, target):
    return lambda: m.nn.functional.cross_entropy(x, target)


def _nll_loss(m, x, target):
    logp = m.nn.functional.log_softmax(x, 1)
    return lambda: m.nn.functional.nll_loss(logp, target)


def _cross_entropy_backward(m, x, target):
    x = x.detach().clone().requires_grad_()
    return lambda: m.nn.functional.cross_entropy(x, target).backward()


def _module_call(m, x, y):
    m.manual_seed(0)
    linear = m.nn.Linear(4, 4)
    return lambda: linear(x)


def _sparse_add_(m, x, y):
    """``add_`` of two 4x4 COO tensors with the same pattern (all 16 entries), in place."""
    s, t = x.to_sparse(), y.to_sparse()
    return lambda: s.add_(t)


# forward-only calls of the classes the rows above leave out, over the tiny x, y:
# name -> make(framework module, x, y) -> the call
_CALLS = {
    "x * 2.0 (scalar operand)": lambda m, x, y: lambda: x * 2.0,
    "x.view(-1)": lambda m, x, y: lambda: x.view(-1),
    "x.t()": lambda m, x, y: lambda: x.t(),
    "x[1:3] (basic index)": lambda m, x, y: lambda: x[1:3],
    "x.add_(y) (in place)": lambda m, x, y: lambda: x.add_(y).sub_(y),
    "x.mean(1)": lambda m, x, y: lambda: x.mean(1),
    "zeros(4, 4)": lambda m, x, y: lambda: m.zeros(4, 4),
    "softmax(x, -1)": lambda m, x, y: lambda: m.softmax(x, -1),
    "cross_entropy": lambda m, x, y: _cross_entropy(m, x, m.tensor([0, 1, 2, 3])),
    "cross_entropy +bwd": lambda m, x, y: _cross_entropy_backward(m, x, m.tensor([0, 1, 2, 3])),
    "nll_loss": lambda m, x, y: _nll_loss(m, x, m.tensor([0, 1, 2, 3])),
    "x.var(1)": lambda m, x, y: lambda: x.var(1),
    "logsumexp(x, 1)": lambda m, x, y: lambda: m.logsumexp(x, 1),
    "stack([x, y])": lambda m, x, y: lambda: m.stack([x, y]),
    "x.gather(1, i)": lambda m, x, y: (lambda i: lambda: x.gather(1, i))(m.tensor([[0, 1]] * 4)),
    "nn.Linear(4, 4) call": _module_call,
    "Adam.step (4 params)": _optimizer_step,
    "sparse COO add_ (same pattern)": _sparse_add_,
}


# elementwise kernels over a 256x256 float32 x (NumPy's choice of passes, not per-call cost)
_KERNELS = {
    "sign": lambda m, x: lambda: x.sign(),
    "leaky_relu": lambda m, x: lambda: m.nn.functional.leaky_relu(x, 0.1),
    "clamp(-0.5, 0.5)": lambda m, x: lambda: x.clamp(-0.5, 0.5),
    "clamp_(-5, 5)": lambda m, x: lambda: x.clamp_(-5.0, 5.0),
}


def _kernel_cases(n: int = 256) -> dict[str, tuple]:
    a = np.random.default_rng(4).standard_normal((n, n), dtype=np.float32)
    ex, tx = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    return {f"{name} {n}x{n}": (make(ember, ex), make(torch, tx))
            for name, make in _KERNELS.items()}


def _matmul_case(n: int) -> tuple:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n),
                                                                              dtype=np.float32)
    ea, eb = ember.from_numpy(a.copy()).requires_grad_(), ember.from_numpy(b.copy())
    ta, tb = torch.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(b.copy())
    eg, tg = ember.ones(n, n), torch.ones(n, n)

    def e_step():
        (ea @ eb).backward(eg)
        ea.grad = None

    def t_step():
        (ta @ tb).backward(tg)
        ta.grad = None

    return e_step, t_step


def _sparse_mm_case(n: int = 4096, width: int = 64, density: float = 0.01) -> tuple:
    """``sparse.mm`` of an n×n COO matrix (coalesced) and a dense n×width one."""
    rng = np.random.default_rng(2)
    flat = np.unique(rng.integers(0, n * n, int(n * n * density)))
    index = np.stack(np.unravel_index(flat, (n, n)))
    values = rng.standard_normal(len(flat)).astype(np.float32)
    dense = rng.standard_normal((n, width)).astype(np.float32)
    es = ember.sparse_coo_tensor(index, values, (n, n), is_coalesced=True)
    ts = torch.sparse_coo_tensor(torch.from_numpy(index), torch.from_numpy(values),
                                 (n, n)).coalesce()
    ed, td = ember.from_numpy(dense.copy()), torch.from_numpy(dense.copy())
    return lambda: ember.sparse.mm(es, ed), lambda: torch.sparse.mm(ts, td)


def _flex_contenders(shape: tuple[int, int, int, int]) -> dict[str, object]:
    """Causal attention of (B, H, L, E) float32 forward: Ember's flex_attention with a block
    mask, PyTorch's flex_attention eager (its debugging switch) and compiled (its default),
    Ember's dense scaled_dot_product_attention and Ember's flex_attention with no mask."""
    import torch.nn.attention.flex_attention as tfa  # (imports dynamo: only when timed)

    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    eq, tq = ember.from_numpy(x), torch.from_numpy(x)
    length = shape[2]

    def causal(b, h, q, kv):
        return q >= kv
    bm = create_block_mask(causal, None, None, length, length)
    tbm = tfa.create_block_mask(causal, None, None, length, length, device="cpu")

    def torch_flex(compiled: bool) -> object:
        def step() -> object:
            tfa._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = not compiled
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return tfa.flex_attention(tq, tq, tq, block_mask=tbm)
        return step
    return {"ember": lambda: flex_attention(eq, eq, eq, block_mask=bm),
            "torch eager": torch_flex(False), "torch compiled": torch_flex(True),
            "ember sdpa": lambda: F.scaled_dot_product_attention(eq, eq, eq, is_causal=True),
            "ember no mask": lambda: flex_attention(eq, eq, eq)}


def run(quick: bool = False, threads: int = 2) -> list[dict]:
    """Runs every case; returns rows of medians (seconds) and the ratio."""
    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    calls, repeats = (200, 5) if quick else (2000, 9)
    rows = []
    for name, (e, t) in {**_tiny_cases(), **_kernel_cases()}.items():
        s = compare({"ember": e, "torch": t}, calls, repeats)
        rows.append(_row(name, s))
    n = 1024
    s = compare(dict(zip(["ember", "torch"], _matmul_case(n))), 1 if quick else 3,
                3 if quick else 7, warmup=1)
    rows.append(_row(f"matmul {n}x{n} fwd+bwd", s))
    s = compare(dict(zip(["ember", "torch"], _sparse_mm_case())), 1 if quick else 3,
                3 if quick else 7, warmup=1)
    rows.append(_row("sparse.mm 4096x4096 1% @ 4096x64", s))
    s = compare(_flex_contenders((1, 8, 2048, 64)), 1, 3 if quick else 5, warmup=1)
    for baseline, label in FLEX_BASELINES.items():
        rows.append(_row(f"flex_attention causal 1x8x2048x64 fwd, block mask, vs {label}", s,
                         baseline))
    return rows


def _row(name: str, samples: dict, baseline: str = "torch") -> dict:
    e, t = summary(samples["ember"]), summary(samples[baseline])
    return {"case": name, "ember": e, "torch": t, "ratio": e[0] / t[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()
    rows = run(args.quick, args.threads)
    print(f"# Ember {ember.__version__} vs PyTorch {torch.__version__}, {args.threads} threads, "
          f"{platform.processor() or platform.machine()}")
    print("| case | Ember (median, min–max) | baseline: PyTorch unless named (median, min–max) "
          "| Ember/baseline |")
    print("|---|---|---|---|")
    for r in rows:
        e, t = r["ember"], r["torch"]
        print(f"| {r['case']} | {fmt_time(e[0])} ({fmt_time(e[1])}–{fmt_time(e[2])}) | "
              f"{fmt_time(t[0])} ({fmt_time(t[1])}–{fmt_time(t[2])}) | {r['ratio']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
