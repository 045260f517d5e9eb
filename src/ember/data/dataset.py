"""Datasets: the map-style :class:`Dataset` (``len`` and ``dataset[i]``), the stream-style
:class:`IterableDataset`, and the containers built from them (:class:`TensorDataset`,
:class:`Subset`, :class:`ConcatDataset`, :class:`ChainDataset`, :func:`random_split`), with
PyTorch's names and semantics (``torch.utils.data``).
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import ember
from ember.data.sampler import check_generator
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError, type_name
from ember.tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self): return 4
        ...     def __getitem__(self, i): return i * i
        >>> [Squares()[i] for i in range(4)]
        [0, 1, 4, 9]
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` each worker iterates its own copy; use
    :func:`ember.utils.data.get_worker_info` inside ``__iter__`` to split the work.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self): return iter(range(3))
        >>> list(Count())
        [0, 1, 2]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset[T_co]:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the ``index``-th rows of each tensor (all share their first dimension).

    Example:
        >>> ds = TensorDataset(ember.arange(6).reshape(3, 2), ember.tensor([0, 1, 0]))
        >>> ds[1]
        (tensor([2, 3]), tensor(1))
    """

    def __init__(self, *tensors: Tensor) -> None:
        for i, t in enumerate(tensors):
            if not hasattr(t, "shape"):
                raise ArgumentTypeError(f"TensorDataset: argument {i} should be a tensor, but "
                                        f"got {type_name(t)}. Hint: ember.tensor(...) it first")
        if any(t.ndim == 0 for t in tensors):
            raise ShapeError("TensorDataset: a 0-d tensor has no first (sample) dimension; "
                             "reshape it to (1,) or pass tensors of shape (N, ...)")
        if tensors and any(t.shape[:1] != tensors[0].shape[:1] for t in tensors):
            raise ShapeError("TensorDataset: size mismatch between tensors: first dimensions "
                             f"{[tuple(t.shape[:1]) for t in tensors]} must all agree")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset[T_co]):
    """Zips datasets of equal length: items are tuples (positional) or dicts (keywords).

    Example:
        >>> StackDataset([1, 2], [3, 4])[1]
        (2, 4)
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ArgumentError("StackDataset: pass datasets as positional or keyword arguments, "
                                "not both")
        parts = args or tuple(kwargs.values())
        if not parts:
            raise ArgumentError("StackDataset: at least one dataset is needed")
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ArgumentError("StackDataset: size mismatch between datasets")
        self.datasets: tuple | dict = args or kwargs

    def __getitem__(self, index: int) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[tuple | dict]:
        """The items at ``indices``, each dataset read in one batch where it can be
        (``__getitems__``), as the DataLoader asks for them."""
        named = isinstance(self.datasets, dict)
        columns = {k: _items_of(d, indices) for k, d in
                   (self.datasets.items() if named else enumerate(self.datasets))}
        if named:
            return [dict(zip(columns, row)) for row in zip(*columns.values())]
        return list(zip(*columns.values()))

    def __len__(self) -> int:
        return self._length


def _items_of(dataset: Any, indices: list[int]) -> list:
    """``[dataset[i] for i in indices]``, in one ``__getitems__`` call where it has one."""
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is None:
        return [dataset[i] for i in indices]
    items = getitems(indices)
    if len(items) != len(indices):
        raise ArgumentError(f"{type(dataset).__name__}.__getitems__ gave {len(items)} items for "
                            f"{len(indices)} indices")
    return items


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other.

    Example:
        >>> ds = ConcatDataset([[1, 2], [3]])
        >>> len(ds), ds[2], ds[-1]
        (3, 3, 3)
    """

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; "
                                "use ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ArgumentError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset[T_co]):
    """Iterable datasets chained one after the other.

    Example:
        >>> list(ChainDataset([range(2), range(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            yield from _stream(d)

    def __len__(self) -> int:
        return sum(len(_stream(d)) for d in self.datasets)


def _stream(dataset: Any) -> Any:
    """``dataset``, refused if it is a map-style :class:`Dataset` (as PyTorch's ChainDataset):
    iterating one calls ``dataset[0], dataset[1], …`` until an IndexError, forever for one
    whose ``__getitem__`` takes any index."""
    if isinstance(dataset, Dataset) and not isinstance(dataset, IterableDataset):
        raise TypeError(f"ChainDataset only supports IterableDataset, but got the map-style "
                        f"{type(dataset).__name__}. Hint: ConcatDataset chains map-style "
                        f"datasets")
    return dataset


class Subset(Dataset[T_co]):
    """The items of ``dataset`` at ``indices``, in that order.

    Example:
        >>> Subset([10, 11, 12, 13], [3, 0])[0]
        13
    """

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            # (the DataLoader reads batches through __getitems__: the override would be skipped)
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__, which the "
                f"DataLoader reads batches with: your __getitem__ would be skipped. Hint: add "
                f"def __getitems__(self, indices): return [self[i] for i in indices]")
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        return _items_of(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence[int | float]) -> list[int]:
    """Fractions summing to 1 become counts (floors, the remainder dealt round-robin; an
    empty part warns, as PyTorch's)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ArgumentError(f"random_split: fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              f"empty dataset.", stacklevel=3)
        return counts
    if any(int(x) != x or x < 0 for x in lengths):
        raise ArgumentError(f"random_split: lengths must be non-negative ints or fractions "
                            f"summing to 1, got {list(lengths)}")
    counts = [int(x) for x in lengths]
    if sum(counts) != n:
        raise ArgumentError(f"random_split: sum of input lengths ({sum(counts)}) does not equal "
                            f"the length of the input dataset ({n})")
    return counts


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float],
                 generator: ember.Generator | None = None) -> list[Subset[T_co]]:
    """Splits ``dataset`` at random into non-overlapping :class:`Subset` s.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1 (floors,
    with the remainder given one by one to the first parts, as PyTorch does).

    Example:
        >>> a, b = random_split(range(10), [0.7, 0.3], generator=ember.Generator().manual_seed(0))
        >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
        (7, 3, True)
    """
    check_generator("random_split", generator)
    counts = _split_lengths(len(dataset), lengths)
    perm = ember.randperm(sum(counts), generator=generator).tolist()
    ends = list(itertools.accumulate(counts))
    return [Subset(dataset, perm[end - c:end]) for c, end in zip(counts, ends)]
