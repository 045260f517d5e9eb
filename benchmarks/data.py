"""``python -m benchmarks.data [--quick]``: ``ember.utils.data.DataLoader`` against
``torch.utils.data.DataLoader`` on the same work, alternating in one run, median of the repeats,
with the ratio Ember/PyTorch. Cases: a TensorDataset of Fashion-MNIST size (60000x28x28 uint8
as float32, int64 labels) read shuffled at batch 64 and 256; a map-style dataset with a
per-item Python transform (scale, flip: mostly the frameworks' per-op cost), tuples or dicts,
with 0 and 2 workers (persistent, prefetch_factor 2 and 4); the same items stored ready-made
(the loader and its collate alone). Each timed call reads ``BATCHES`` batches from a fresh
iterator."""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata
from benchmarks.timing import compare, fmt_time, summary

N, BATCHES = 60000, 200


class _Items:
    """Map-style: item ``i`` is (image as float / 255, flipped left-right; label), as a tuple
    or a dict; ``lib`` is ember or torch. ``stored``: the images are kept as float32 rows and
    returned as they are."""

    def __init__(self, lib: object, images: np.ndarray, labels: np.ndarray, as_dict: bool,
                 stored: bool = False):
        self.as_dict, self.stored = as_dict, stored
        self.images = ([lib.from_numpy(r) for r in images.astype(np.float32)] if stored
                       else lib.from_numpy(images))
        self.labels = labels.tolist()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> object:
        x = self.images[i] if self.stored else self.images[i].float().div(255.0).flip(-1)
        return {"image": x, "label": self.labels[i]} if self.as_dict else (x, self.labels[i])


def _reader(loader: object, batches: int) -> object:
    def read() -> None:
        for _ in itertools.islice(iter(loader), batches):
            pass
    return read


def _loaders(case: str, images: np.ndarray, labels: np.ndarray) -> tuple[object, object, int]:
    """(ember loader, torch loader, batches per call) for the named case."""
    if case.startswith("tensor"):
        batch = int(case.split("b")[-1])
        x = images.astype(np.float32) / 255
        eds = edata.TensorDataset(ember.from_numpy(x), ember.from_numpy(labels))
        tds = tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(labels))
        return (edata.DataLoader(eds, batch_size=batch, shuffle=True),
                tdata.DataLoader(tds, batch_size=batch, shuffle=True), N // batch)
    as_dict = "dict" in case
    workers = 2 if "w2" in case else 0
    kw: dict = dict(batch_size=64, shuffle=True, num_workers=workers)
    if workers:
        kw.update(persistent_workers=True, pin_memory=False,
                  prefetch_factor=4 if "pf4" in case else 2)
    stored = case.startswith("stored")
    return (edata.DataLoader(_Items(ember, images, labels, as_dict, stored), **kw),
            tdata.DataLoader(_Items(torch, images, labels, as_dict, stored), **kw), BATCHES)


CASES = ("tensor b64", "tensor b256", "stored tuple w0", "stored dict w0", "items tuple w0",
         "items dict w0", "items tuple w2", "items dict w2 pf4")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("cases", nargs="*", help=f"any of {CASES} (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (N, 28, 28), np.uint8)
    labels = rng.integers(0, 10, N).astype(np.int64)
    for case in args.cases or CASES:
        eload, tload, batches = _loaders(case, images, labels)
        times = compare({"ember": _reader(eload, batches), "torch": _reader(tload, batches)},
                        calls=1, repeats=3 if args.quick else 5, warmup=1)
        e, t = (summary(times[k])[0] for k in ("ember", "torch"))
        print(f"{case:18s} {batches:4d} batches  ember {fmt_time(e):>9s}  torch "
              f"{fmt_time(t):>9s}  ratio {e / t:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
