"""Fetchers: turn what the sampler yields (an index, a list of indices, or for an
iterable dataset the request for one more batch) into a collated batch. The single-process
loader and every worker process use the same code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.data.collate import default_collate
from ember.data.dataset import TensorDataset


class MapFetcher:
    """Reads ``dataset[i]`` for each index (or ``dataset.__getitems__(indices)``)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # A TensorDataset read with the default collate is one gather per tensor, not a
        # Python loop over the batch; the batch is the same (a list of stacked rows).
        self.whole = (auto_collation and type(dataset) is TensorDataset
                      and collate_fn is default_collate)
        self.getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.whole:
            rows = np.asarray(index)
            if rows.dtype.kind in "iu" and rows.ndim == 1:  # (others: as dataset[i] reads them)
                rows = ember.from_numpy(rows.astype(np.int64, copy=False))
                return [t[rows] for t in self.dataset.tensors]
        data = self.getitems(index) if self.getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Reads the next item (or ``batch_size`` items) from an iterator over the dataset."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(is_iterable: bool, *args: Any) -> MapFetcher | IterableFetcher:
    return (IterableFetcher if is_iterable else MapFetcher)(*args)
