"""Samplers: the order in which a :class:`~ember.data.DataLoader` visits a dataset's indices.

Random samplers draw from an :class:`ember.Generator`; without one they take a fresh seed from
the default generator each epoch (as PyTorch does), so ``ember.manual_seed`` makes runs repeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

import ember
from ember.errors import ArgumentError, ArgumentTypeError, type_name

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: an iterable of indices (or of lists of indices, for batch samplers);
    generic as PyTorch's, so ``class MyBatches(Sampler[list[int]])`` ports as it is."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


def check_generator(owner: str, generator: Any) -> None:
    """Refuses a ``generator`` that is not an :class:`ember.Generator` (or None)."""
    if generator is not None and not isinstance(generator, ember.Generator):
        raise ArgumentTypeError(f"{owner}: generator should be an ember.Generator or None, but "
                                f"got {type_name(generator)}")


def _weights_array(weights: Any) -> np.ndarray:
    """``weights`` as a float64 array: ragged rows are an ArgumentError (a shape problem),
    strings (also numeric ones, which NumPy would parse) and other non-numbers an
    ArgumentTypeError."""
    try:
        raw = np.asarray(weights)
    except ValueError:
        raise ArgumentError(f"WeightedRandomSampler: weights should be a 1d sequence of "
                            f"numbers, but its rows differ in length: {weights!r:.80}") from None
    try:
        if raw.dtype.kind in "SU":
            raise TypeError(raw.dtype)
        return raw.astype(np.float64)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"WeightedRandomSampler: weights should be a sequence of "
                                f"numbers, but got {weights!r:.80}") from None


def _epoch_generator(generator: ember.Generator | None) -> ember.Generator:
    """The given generator, or a new one seeded from the default generator."""
    if generator is not None:
        return generator
    seed = int(ember.randint(0, 2 ** 62, (), dtype=ember.int64).item())
    return ember.Generator().manual_seed(seed)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ArgumentError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


class SequentialSampler(Sampler):
    """Indices ``0, 1, …, len(data_source) - 1`` in order.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a permutation per pass (repeated passes and a final partial
    one when ``num_samples > len(data_source)``), or with ``replacement=True`` independent
    uniform draws.

    Example:
        >>> sorted(RandomSampler(range(4), generator=ember.Generator().manual_seed(0)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None,
                 generator: ember.Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise ArgumentTypeError(f"replacement should be a boolean value, but got "
                                    f"replacement={replacement!r}")
        check_generator("RandomSampler", generator)
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k = len(self.data_source), self.num_samples
        if n == 0 and k > 0:
            raise ArgumentError(f"RandomSampler: cannot draw {k} samples from an empty dataset")
        g = _epoch_generator(self.generator)
        if self.replacement:
            return iter(ember.randint(0, n, (k,), generator=g).tolist())
        full, rest = divmod(k, n)
        parts = [ember.randperm(n, generator=g) for _ in range(full)]
        if rest:
            parts.append(ember.randperm(n, generator=g)[:rest])
        return iter(ember.cat(parts).tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new permutation each pass).

    Example:
        >>> sorted(SubsetRandomSampler([5, 7, 9]))
        [5, 7, 9]
    """

    def __init__(self, indices: Sequence[int],
                 generator: ember.Generator | None = None) -> None:
        check_generator("SubsetRandomSampler", generator)
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        perm = ember.randperm(len(self.indices), generator=self.generator).tolist()
        return iter([self.indices[i] for i in perm])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Example:
        >>> s = WeightedRandomSampler([0.0, 1.0, 0.0], 4)
        >>> list(s)
        [1, 1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: ember.Generator | None = None) -> None:
        _positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ArgumentError(f"replacement should be a boolean value, but got "
                                f"replacement={replacement!r}")
        check_generator("WeightedRandomSampler", generator)
        w = ember.as_tensor(_weights_array(weights))
        if w.ndim != 1:
            raise ArgumentError(f"weights should be a 1d sequence but given weights have shape "
                                f"{tuple(w.shape)}")
        if bool((w < 0).any()) or not bool(ember.isfinite(w).all()) or w.sum().item() <= 0:
            raise ArgumentError("weights should be finite and non-negative, with a positive sum")
        self.weights = w
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        nonzero = int((self.weights > 0).sum().item())
        if not self.replacement and self.num_samples > nonzero:  # (when drawn, as PyTorch's)
            raise RuntimeError(f"WeightedRandomSampler: cannot draw {self.num_samples} samples "
                               f"without replacement from {nonzero} non-zero weights. Hint: "
                               "pass replacement=True or a smaller num_samples")
        drawn = ember.multinomial(self.weights, self.num_samples, self.replacement,
                                  generator=self.generator)
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``).

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        _positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ArgumentError(f"drop_last should be a boolean value, but got "
                                f"drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        size = self.batch_size
        while True:
            batch = [idx for _, idx in zip(range(size), it)]
            if len(batch) < size:
                if batch and not self.drop_last:
                    yield batch
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
