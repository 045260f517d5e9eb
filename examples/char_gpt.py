"""Train a character-level GPT on the Python standard library's source and print samples.

Bytes are the tokens (vocabulary 256). Run from the repository root:

    python examples/char_gpt.py --steps 300

A few hundred steps already give Python-looking indentation, ``def`` and ``self.``; a few
thousand give plausible lines.
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import numpy as np

import ember
import ember.nn.functional as F
from ember.models import gpt


def stdlib_text(max_bytes: int) -> np.ndarray:
    """The bytes of the standard library's top-level ``.py`` files, up to ``max_bytes``."""
    chunks, size = [], 0
    for path in sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py"))):
        with open(path, "rb") as f:
            chunks.append(f.read())
        size += len(chunks[-1])
        if size >= max_bytes:
            break
    return np.frombuffer(b"".join(chunks)[:max_bytes], dtype=np.uint8)


def batch(data: np.ndarray, block: int, size: int, rng: np.random.Generator
          ) -> tuple[ember.Tensor, ember.Tensor]:
    """``size`` random windows of ``block`` bytes and the same windows shifted by one."""
    starts = rng.integers(0, len(data) - block - 1, size)
    windows = data[starts[:, None] + np.arange(block + 1)].astype(np.int64)
    return ember.from_numpy(windows[:, :-1].copy()), ember.from_numpy(windows[:, 1:].copy())


def sample(model, prompt: str, n: int, temperature: float) -> str:
    idx = ember.tensor([list(prompt.encode())])
    out = model.generate(idx, n, temperature=temperature, top_k=40)
    return bytes(out[0].tolist()).decode("utf-8", errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--data-bytes", type=int, default=2_000_000)
    parser.add_argument("--sample-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in ("batch_size", "block_size", "layers", "d_model", "sample_every"):
        if getattr(args, name) < 1:  # (0 made NaN losses, a modulo by zero, a GPT error)
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, name)}")

    ember.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    data = stdlib_text(args.data_bytes)
    split = int(0.95 * len(data))
    train, val = data[:split], data[split:]
    if len(val) < args.block_size + 2:
        parser.error(f"--data-bytes {args.data_bytes} gives a validation slice (the last 5 %) "
                     f"of {len(val)} bytes, too short for a window of --block-size "
                     f"{args.block_size}: give --data-bytes {20 * (args.block_size + 2) + 20} "
                     f"or more")
    model = gpt(vocab_size=256, block_size=args.block_size, n_layer=args.layers, n_head=4,
                d_model=args.d_model)
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(data):,} bytes of Python from {os.path.dirname(os.__file__)}; "
          f"GPT with {n_params:,} parameters")

    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        model.train()
        x, y = batch(train, args.block_size, args.batch_size, rng)
        loss = F.cross_entropy(model(x).view(-1, 256), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step:5d}  loss {loss.item():.3f}  "
                  f"{step / (time.perf_counter() - start):.1f} steps/s", flush=True)
        if step % args.sample_every == 0 or step == args.steps:
            model.eval()
            with ember.no_grad():
                vx, vy = batch(val, args.block_size, 32, rng)
                val_loss = F.cross_entropy(model(vx).view(-1, 256), vy.view(-1)).item()
            print(f"--- step {step}, validation loss {val_loss:.3f}, a sample:")
            print(sample(model, "def ", 200, temperature=0.8))
            print("---", flush=True)


if __name__ == "__main__":
    main()
