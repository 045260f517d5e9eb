"""``SobolEngine``: PyTorch's ``torch.quasirandom.SobolEngine``, (scrambled) Sobol' sequences.

Points are generated in Gray-code order, as PyTorch does: point ``i`` is point ``i - 1`` with
the direction number of the lowest set bit of ``i`` XORed in, so unscrambled draws equal
PyTorch's bit for bit. Scrambling (a random lower-triangular linear matrix scramble of each
dimension's digits, then a random digital shift) draws from Ember's generator, so scrambled
values differ from PyTorch's while keeping the same guarantees: every point lies in [0, 1) and
the first ``2**m`` points keep the sequence's stratification.
"""

from __future__ import annotations

import operator

import numpy as np

from ember import dtypes
from ember.errors import DTypeError
from ember.ops.creation import from_numpy
from ember.ops.random import Generator, default_generator
from ember.quasirandom.direction_numbers import MAXBIT, MAXDIM, direction_numbers
from ember.tensor import Tensor


class SobolEngine:
    """Draws points of a Sobol' sequence, a low-discrepancy (quasi-random) sequence in the unit
    cube ``[0, 1)**dimension``, with Joe and Kuo's direction numbers (up to 21201 dimensions).

    Draws continue the sequence: each ``draw`` starts where the last one stopped.

    Args:
        dimension: Number of coordinates of each point, from 1 to 21201.
        scramble: Scramble the sequence (Owen's linear matrix scramble and a digital shift),
            which keeps its balance and removes its regular patterns. Default: ``False``.
        seed: Seed of the scrambling; ``None`` draws it from Ember's default generator, so
            ``ember.manual_seed`` makes it reproducible.

    Example:
        >>> engine = ember.quasirandom.SobolEngine(dimension=3)
        >>> engine.draw(3)
        tensor([[0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500]])
    """

    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        dimension = operator.index(dimension)  # a float or string fails here, a TypeError
        if not 1 <= dimension <= MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._directions = direction_numbers(dimension)
        if scramble:
            rng = (default_generator if seed is None else Generator().manual_seed(seed)).numpy
            self._shift = rng.integers(0, 2 ** MAXBIT, size=dimension, dtype=np.int64)
            self._directions = _scrambled(self._directions, rng)
        else:
            self._shift = np.zeros(dimension, dtype=np.int64)
        self._quasi = self._shift.copy()  # the last point drawn (the first, before any draw)
        self.num_generated = 0

    def draw(self, n: int = 1, out: Tensor | None = None, dtype: dtypes.DType | None = None,
             ) -> Tensor:
        """The next ``n`` points, a ``(n, dimension)`` tensor of ``dtype`` (float32 or float64;
        default: the default dtype), written into ``out`` (resized) if given.

        Example:
            >>> engine = ember.quasirandom.SobolEngine(2)
            >>> engine.draw(2)[1], engine.draw(dtype=ember.float64)
            (tensor([0.5000, 0.5000]), tensor([[0.7500, 0.2500]], dtype=ember.float64))
        """
        dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
        if dt not in (dtypes.float32, dtypes.float64):
            raise DTypeError(f"SobolEngine.draw: dtype must be float32 or float64, got {dt.name}"
                             ". Hint: draw floats, then convert the result")
        n = self._check_count("draw", n)
        index = np.arange(self.num_generated, self.num_generated + n, dtype=np.int64)
        steps = self._directions[_lowest_set_bit(index)]
        steps[index == 0] = 0  # the first point is the start itself
        points = _running_xor(steps)
        points ^= self._quasi
        if n:
            self._quasi = points[-1].copy()
        self.num_generated += n
        values = points.astype(dt.np)  # rounds as the product would: the scale is a power of 2
        values *= 2.0 ** -MAXBIT
        result = from_numpy(values)
        return result if out is None else out.resize_as_(result).copy_(result)

    def draw_base2(self, m: int, out: Tensor | None = None,
                   dtype: dtypes.DType | None = None) -> Tensor:
        """The next ``2**m`` points; the count drawn so far must stay a power of 2, which keeps
        the balance properties of Sobol' points.

        Example:
            >>> ember.quasirandom.SobolEngine(1).draw_base2(2).flatten()
            tensor([0.0000, 0.5000, 0.7500, 0.2500])
        """
        m = operator.index(m)  # a plain int: 2 ** np.uint8(9) would wrap to 0
        if m < 0:
            raise ValueError(f"SobolEngine.draw_base2: m must be at least 0, got {m}")
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, please "
                "use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def fast_forward(self, n: int) -> SobolEngine:
        """Skips the next ``n`` points, as drawing them would, in time independent of ``n``.

        Example:
            >>> ember.quasirandom.SobolEngine(1).fast_forward(3).draw()
            tensor([[0.2500]])
        """
        n = self._check_count("fast_forward", n)
        if n:
            last = self.num_generated + n - 1
            gray = last ^ (last >> 1)  # the steps XORed in up to point i are gray(i)'s bits
            used = (gray >> np.arange(MAXBIT)) & 1 == 1
            self._quasi = self._shift ^ np.bitwise_xor.reduce(self._directions[used], axis=0)
        self.num_generated += n
        return self

    def reset(self) -> SobolEngine:
        """Back to the sequence's first point, as if nothing had been drawn.

        Example:
            >>> engine = ember.quasirandom.SobolEngine(1)
            >>> bool((engine.draw(4)[:2] == engine.reset().draw(2)).all())
            True
        """
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def _check_count(self, op: str, n: int) -> int:
        """``n`` as a plain int (a NumPy uint8 would wrap ``num_generated``); fails unless ``n``
        more points are a whole number the sequence still has."""
        n = operator.index(n)
        if n < 0:
            raise ValueError(f"SobolEngine.{op}: n must be at least 0, got {n}")
        if self.num_generated + n > 2 ** MAXBIT:
            raise ValueError(f"SobolEngine.{op}: a Sobol' sequence has 2**{MAXBIT} points; "
                             f"{self.num_generated} are drawn and {n} more asked. Hint: reset()")
        return n

    def __repr__(self) -> str:
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(fields)})"


def _lowest_set_bit(index: np.ndarray) -> np.ndarray:
    """Position of each index's lowest set bit (0 for index 0, whose step is masked anyway)."""
    lowest = index & -index
    return np.frexp(np.maximum(lowest, 1).astype(np.float64))[1] - 1


def _running_xor(steps: np.ndarray) -> np.ndarray:
    """Cumulative XOR down the rows, in place. NumPy's ``accumulate`` along axis 0 walks each
    column with a row-sized stride, so for wide rows a loop over rows is many times faster."""
    if steps.shape[1] < 64:
        return np.bitwise_xor.accumulate(steps, axis=0, out=steps)
    for i in range(1, len(steps)):
        np.bitwise_xor(steps[i], steps[i - 1], out=steps[i])
    return steps


def _scrambled(directions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each dimension's direction numbers times a random lower-triangular 0/1 matrix with unit
    diagonal over GF(2), on digits from the most significant: digit ``r`` of the result mixes
    digits ``0..r``, so the matrix is invertible and keeps every elementary interval's count.

    Digit ``c`` sits at bit ``29 - c``; the matrix's column ``c`` (which output digits input
    digit ``c`` flips), as an integer, is that bit set and random bits below it."""
    scrambled = np.zeros_like(directions)
    for c in range(MAXBIT):
        place = MAXBIT - 1 - c
        column = rng.integers(0, 1 << place, size=directions.shape[1]) | (1 << place)
        scrambled ^= ((directions >> place) & 1) * column
    return scrambled
