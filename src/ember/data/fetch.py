"""Fetchers: turn what the sampler yields (an index, a list of indices, or for an
iterable dataset the request for one more batch) into a collated batch. The single-process
loader and every worker process use the same code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.data.collate import default_collate
from ember.data.dataset import Subset, TensorDataset


def _tensor_source(dataset: Any) -> tuple[TensorDataset | None, list[Subset]]:
    """The TensorDataset under ``dataset`` (itself, or under plain Subsets, as random_split
    gives) and those Subsets, outermost first; ``(None, [])`` for any other dataset."""
    subsets = []
    while type(dataset) is Subset:
        subsets.append(dataset)
        dataset = dataset.dataset
    return (dataset, subsets) if type(dataset) is TensorDataset else (None, [])


def _int_rows(index: Any) -> np.ndarray | None:
    rows = np.asarray(index)
    if rows.dtype.kind not in "iu" or rows.ndim != 1:
        return None
    if rows.dtype == np.uint64 and rows.size and rows.max() > np.iinfo(np.int64).max:
        return None  # (as int64 it would wrap to a row counted from the end)
    return rows


def _rows(index: Any, subsets: list[Subset]) -> np.ndarray | None:
    """The rows of the TensorDataset that ``index`` reads through ``subsets``; None when an
    index is not an integer (the items are then read one by one, as ``dataset[i]`` does)."""
    rows = _int_rows(index)
    for subset in subsets:
        if rows is None:
            return None
        ind = subset.indices
        rows = _int_rows([ind[i] for i in rows.tolist()] if isinstance(ind, list | tuple | range)
                         else np.asarray(ind)[rows])
    return rows


class MapFetcher:
    """Reads ``dataset[i]`` for each index (or ``dataset.__getitems__(indices)``)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # A TensorDataset (or a Subset of one) read with the default collate is one gather per
        # tensor, not a Python loop over the batch; the batch is the same (a list of stacked
        # rows).
        self.source, self.subsets = _tensor_source(dataset)
        if not auto_collation or collate_fn is not default_collate:
            self.source = None
        self.getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.source is not None:
            rows = _rows(index, self.subsets)
            if rows is not None:
                rows = ember.from_numpy(rows.astype(np.int64, copy=False))
                return [t[rows] for t in self.source.tensors]
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
