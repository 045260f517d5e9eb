"""Mixed precision and memory savers, measured.

A GPT under autocast(bfloat16) against float32, activation checkpointing on an 8-layer GPT,
and memory-efficient attention at T=8192.

    python examples/amp_memory.py                 # everything (a few minutes)
    python examples/amp_memory.py --only amp --steps 200

Memory is measured with ``ember.memory`` (bytes held by live tensors, counted where tensors
are made, as PyTorch's ``memory_allocated``): "kept" is what the graph holds after the forward
pass (the activations backward needs), "peak" the high-water mark over forward and backward,
both above what existed before (parameters, optimizer state). ``--tracemalloc`` also shows
``tracemalloc``'s view (every NumPy buffer, including temporaries inside one kernel, which
``ember.memory`` does not see; slower). The figures are quoted in docs/mixed_precision.md and
docs/memory.md.
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import sysconfig
import time
import tracemalloc

import numpy as np

import ember
import ember.models
import ember.nn.functional as F
from ember.ops import attention
from ember.utils.checkpoint import checkpoint


def corpus(limit: int = 2_000_000) -> np.ndarray:
    """Bytes of the Python standard library's sources (a char-level corpus)."""
    stdlib = sysconfig.get_paths()["stdlib"]
    data = bytearray()
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py"))):
        with open(path, "rb") as f:
            data += f.read()
        if len(data) >= limit:
            break
    return np.frombuffer(bytes(data[:limit]), dtype=np.uint8).astype(np.int64)


def batches(data: np.ndarray, steps: int, batch: int, block: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block - 1, batch)
        idx = np.stack([data[s:s + block + 1] for s in starts])
        yield ember.tensor(idx[:, :-1]), ember.tensor(idx[:, 1:])


def measure(fn, with_tracemalloc=False):
    """Memory of one forward (``fn()``, returning a scalar loss) and its backward, as a dict:
    ``kept`` (bytes after forward), ``peak`` (over forward+backward), both above the bytes
    held before, and ``loss``; with ``with_tracemalloc`` also ``tm_kept``/``tm_peak``."""
    gc.collect()
    out = {}
    with ember.memory.tracking():
        base = ember.memory.allocated()
        ember.memory.reset_peak()
        if with_tracemalloc:
            tracemalloc.start()
            tm_base = tracemalloc.get_traced_memory()[0]
        loss = fn()
        out["kept"] = ember.memory.allocated() - base
        if with_tracemalloc:
            out["tm_kept"] = tracemalloc.get_traced_memory()[0] - tm_base
        loss.backward()
        out["peak"] = ember.memory.max_allocated() - base
        if with_tracemalloc:
            out["tm_peak"] = tracemalloc.get_traced_memory()[1] - tm_base
            tracemalloc.stop()
    out["loss"] = float(loss.item())
    return out


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def describe(m):
    """``kept …, peak …`` (and tracemalloc's figures when measured)."""
    text = f"saved activations {mib(m['kept'])}, peak {mib(m['peak'])}"
    if "tm_kept" in m:
        text += f" [tracemalloc: {mib(m['tm_kept'])}, peak {mib(m['tm_peak'])}]"
    return text


def identity_hooks():
    """Identity saved-tensor hooks: nodes then keep only what their rules read."""
    return ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def train(data, steps, amp, cfg, tm=False, log_every=50):
    ember.manual_seed(0)
    model = ember.models.gpt(**cfg)
    opt = ember.optim.AdamW(model.parameters(), lr=3e-3)
    losses, mem = [], {}
    t0 = time.perf_counter()
    for step, (x, y) in enumerate(batches(data, steps, 16, cfg["block_size"])):
        def forward(x=x, y=y):
            with ember.autocast("cpu", dtype=ember.bfloat16, enabled=amp):
                logits = model(x)
                return F.cross_entropy(logits.view(-1, cfg["vocab_size"]), y.view(-1))
        if step == 1:  # same math twice: with identity hooks, then as trained
            opt.zero_grad()
            with identity_hooks():
                mem["hooks"] = measure(forward, tm)
        opt.zero_grad()
        if step == 1:
            mem["plain"] = measure(forward, tm)
            loss = mem["plain"]["loss"]
        else:
            loss_t = forward()
            loss_t.backward()
            loss = float(loss_t.item())
        opt.step()
        losses.append(loss)
        if log_every and step % log_every == 0:
            print(f"  {'bf16' if amp else 'fp32'} step {step:4d} loss {loss:.4f}")
    secs = time.perf_counter() - t0
    return float(np.mean(losses[-10:])), mem, secs


GPT_SIZES = {  # "workload" is the benchmark suite's gpt (4 layers, d_model 256, sequence 128)
    "small": dict(vocab_size=256, block_size=64, n_layer=2, n_head=4, d_model=64),
    "workload": dict(vocab_size=256, block_size=128, n_layer=4, n_head=4, d_model=256),
}


def run_amp(steps, tm=False, size="small"):
    cfg = GPT_SIZES[size]
    data = corpus()
    print(f"GPT {cfg}, batch 16, {steps} steps of AdamW on {len(data):,} bytes of stdlib source")
    fp32 = train(data, steps, False, cfg, tm)
    bf16 = train(data, steps, True, cfg, tm)
    for name, (loss, mem, secs) in (("float32", fp32), ("autocast bf16", bf16)):
        print(f"{name:>14}: final loss {loss:.4f} (mean of last 10), {secs:.0f} s")
        print(f"{'':>16}step 1: {describe(mem['plain'])}")
        print(f"{'':>16}step 1, identity saved-tensor hooks: {describe(mem['hooks'])}")
    print(f"  loss gap {100 * (bf16[0] - fp32[0]) / fp32[0]:+.2f} %")
    for kind in ("plain", "hooks"):
        a, b = fp32[1][kind], bf16[1][kind]
        print(f"  {kind}: saved activations {100 * (1 - b['kept'] / a['kept']):.0f} % smaller, "
              f"peak {100 * (1 - b['peak'] / a['peak']):.0f} % smaller")


def run_checkpoint(tm=False):
    cfg = dict(vocab_size=256, block_size=128, n_layer=8, n_head=4, d_model=128)
    ember.manual_seed(0)
    model = ember.models.gpt(**cfg)
    idx = ember.randint(0, 256, (8, 128))

    def plain():
        return F.cross_entropy(model(idx).view(-1, 256), idx.view(-1))

    def ckpt():
        x = model.tok_emb(idx) + model.pos_emb(ember.arange(idx.shape[1]))
        for block in model.blocks:
            x = checkpoint(block, x)
        return F.cross_entropy(model.head(model.ln_f(x)).view(-1, 256), idx.view(-1))

    print(f"GPT {cfg}, batch 8 × 128 tokens")
    plain().backward()  # untimed: the first pass also compiles kernels (3 s of 4 on 2 cores)
    res = {}
    for name, fn in (("plain", plain), ("checkpointed", ckpt)):
        model.zero_grad()
        t0 = time.perf_counter()
        m = measure(fn, tm)
        res[name] = (m, [p.grad.numpy().copy() for p in model.parameters()])
        print(f"{name:>13}: {describe(m)}, loss {m['loss']:.5f}, forward+backward "
              f"{time.perf_counter() - t0:.2f} s")
    same = all(np.array_equal(a, b) for a, b in zip(res["plain"][1], res["checkpointed"][1]))
    p, c = res["plain"][0], res["checkpointed"][0]
    print(f"  saved {100 * (1 - c['kept'] / p['kept']):.0f} % lower, peak "
          f"{100 * (1 - c['peak'] / p['peak']):.0f} % lower; gradients identical: {same}")


def run_attention(T, tm=False):
    heads, dim = 4, 64
    rng = np.random.default_rng(0)
    q, k, v = (ember.tensor(rng.standard_normal((1, heads, T, dim)).astype(np.float32),
                            requires_grad=True) for _ in range(3))
    attention.MEMORY_EFFICIENT_MIN = 0
    t0 = time.perf_counter()
    m = measure(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True).square().mean(),
                tm)
    secs = time.perf_counter() - t0
    inputs = 3 * q.numel() * 4
    scores = heads * T * T * 4
    print(f"attention T={T}, {heads} heads, head dim {dim}, causal, float32, blockwise: "
          f"{describe(m)} (inputs {mib(inputs)}), {secs:.1f} s; the {heads} heads' T×T "
          f"score matrices alone are {mib(scores)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["amp", "checkpoint", "attention"])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--T", type=int, default=8192)
    ap.add_argument("--gpt", choices=sorted(GPT_SIZES), default="small",
                    help="the GPT of the amp comparison (workload: the benchmark's gpt)")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="also show tracemalloc's figures (kernel temporaries too; slower)")
    args = ap.parse_args()
    if args.only in (None, "checkpoint"):
        run_checkpoint(args.tracemalloc)
    if args.only in (None, "attention"):
        run_attention(args.T, args.tracemalloc)
    if args.only in (None, "amp"):
        run_amp(args.steps, args.tracemalloc, args.gpt)


if __name__ == "__main__":
    main()
