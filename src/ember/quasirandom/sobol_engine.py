"""``SobolEngine``: PyTorch's ``torch.quasirandom.SobolEngine``, (scrambled) Sobol' sequences.

Points are in Gray-code order, as PyTorch's: point ``i`` XORs the direction numbers of the set
bits of ``gray(i) = i ^ (i >> 1)`` (which is point ``i - 1`` with one more direction number
XORed in, as PyTorch computes it), so unscrambled draws equal PyTorch's bit for bit.
Scrambling (a random lower-triangular linear matrix scramble of each dimension's digits, then a
random digital shift) draws its random bits as PyTorch's does, from a Mersenne Twister seeded
with ``seed`` (its low 32 bits), so a seeded scrambled engine equals PyTorch's too. Every point
lies in [0, 1) (float32 may round it to 1.0) and the first ``2**m`` points keep the sequence's
stratification.
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, OpError
from ember.ops.creation import from_numpy
from ember.ops.primitive import DISPATCH
from ember.ops.random import default_generator
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
        seed: Seed of the scrambling (the same points as PyTorch's for the same seed);
            ``None`` draws it from Ember's default generator, so ``ember.manual_seed`` makes it
            reproducible.

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
            raise ArgumentError("Supported range of dimensionality for SobolEngine is [1, "
                                f"{MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self._directions = direction_numbers(dimension)
        if scramble:
            if seed is None:
                seed = int(default_generator.numpy.integers(0, 2 ** 32))
            elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
                raise TypeError(f"SobolEngine: seed must be an integer or None, got "
                                f"{type(seed).__name__} {seed!r}")
            elif not -2 ** 63 <= seed < 2 ** 64:
                raise ArgumentError(f"SobolEngine: seed must be in [-2**63, 2**64) (a 64-bit "
                                    f"integer, as PyTorch's generators take), got {seed}")
            self._shift, self._directions = _scrambled(self._directions, int(seed))
        else:
            self._shift = np.zeros(dimension, dtype=np.int64)
        self.num_generated = 0

    @property
    def sobolstate(self) -> Tensor:
        """The direction numbers (scrambled, if so), a ``(dimension, 30)`` int64 tensor, as
        PyTorch's attribute (read-only here)."""
        return from_numpy(self._directions.T.copy())

    @property
    def shift(self) -> Tensor:
        """The digital shift, a ``(dimension,)`` int64 tensor (zeros unscrambled), as PyTorch's
        attribute (read-only here)."""
        return from_numpy(self._shift.copy())

    @property
    def quasi(self) -> Tensor:
        """The last point drawn (the first before any) as ``(dimension,)`` 30-bit integers, as
        PyTorch's attribute (read-only here).

        Example:
            >>> engine = ember.quasirandom.SobolEngine(2)
            >>> _ = engine.draw(3)
            >>> engine.quasi
            tensor([805306368, 268435456])
        """
        last = max(self.num_generated - 1, 0)
        return from_numpy(_gray_code_points(self._directions, self._shift, last, 1)[0].copy())

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
        _refuse_under_jit("draw")
        n = self._check_count("draw", n)
        points = _gray_code_points(self._directions, self._shift, self.num_generated, n)
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
            raise ArgumentError(f"SobolEngine.draw_base2: m must be at least 0, got {m}")
        n = 2 ** m
        total_n = self.num_generated + n
        if total_n & (total_n - 1):
            raise ArgumentError(
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
        _refuse_under_jit("fast_forward")
        self.num_generated += self._check_count("fast_forward", n)  # a point needs its index only
        return self

    def reset(self) -> SobolEngine:
        """Back to the sequence's first point, as if nothing had been drawn.

        Example:
            >>> engine = ember.quasirandom.SobolEngine(1)
            >>> bool((engine.draw(4)[:2] == engine.reset().draw(2)).all())
            True
        """
        _refuse_under_jit("reset")
        self.num_generated = 0
        return self

    def _check_count(self, op: str, n: int) -> int:
        """``n`` as a plain int (a NumPy uint8 would wrap ``num_generated``); fails unless ``n``
        more points are a whole number the sequence still has."""
        n = operator.index(n)
        if n < 0:
            raise ArgumentError(f"SobolEngine.{op}: n must be at least 0, got {n}")
        if self.num_generated + n > 2 ** MAXBIT:
            raise ArgumentError(f"SobolEngine.{op}: a Sobol' sequence has 2**{MAXBIT} points; "
                                f"{self.num_generated} are drawn and {n} more asked. Hint: reset()")
        return n

    def __repr__(self) -> str:
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(fields)})"


def _refuse_under_jit(op: str) -> None:
    """``ember.jit`` traces a function once and replays its graph, where NumPy-made points would
    be constants: every call would give the trace's points and leave the count alone."""
    if getattr(DISPATCH.handler, "python_effect", None) is not None:  # only jit's tracer has it
        raise OpError(f"SobolEngine.{op} inside a compiled function (ember.jit): its points "
                      "would be frozen at tracing. Hint: draw outside and pass the points in")


def _gray_code_points(directions: np.ndarray, shift: np.ndarray, start: int, n: int,
                      ) -> np.ndarray:
    """Points ``start .. start + n - 1``: point ``i`` XORs ``shift`` and the direction numbers
    of ``gray(i)``'s set bits.

    Writing ``i = q * 2**j + r`` (``r < 2**j``), ``gray(i)`` is ``gray(q)`` in the bits from
    ``j`` up and ``gray(r)`` below, with bit ``j - 1`` flipped when ``q`` is odd; so point ``i``
    is ``high[q] ^ low[r]``: two tables of about ``sqrt(n)`` rows and one broadcast XOR, all
    vectorized (a running XOR down the rows is a Python loop or a strided scan)."""
    j = max(1, (n.bit_length() + 1) // 2)
    low = np.zeros((1 << j, directions.shape[1]), dtype=np.int64)
    for b in range(j):  # gray(2**b .. 2**(b+1) - 1) is gray(2**b - 1 .. 0) with bit b set
        low[1 << b:2 << b] = low[(1 << b) - 1::-1] ^ directions[b]
    q = np.arange(start >> j, ((start + n - 1) >> j) + 1, dtype=np.int64)
    high = (q & 1)[:, None] * directions[j - 1] ^ shift  # shifted here, where it's cheap
    gray_q = q ^ (q >> 1)
    for b in range(int(q[-1]).bit_length() if len(q) else 0):
        high ^= ((gray_q >> b) & 1)[:, None] * directions[j + b]
    offset = start - ((start >> j) << j)
    return (high[:, None, :] ^ low).reshape(-1, low.shape[1])[offset:offset + n]


def _scrambled(directions: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random digital shift and each dimension's direction numbers times a random
    lower-triangular 0/1 matrix with unit diagonal over GF(2), on digits from the most
    significant: digit ``r`` of the result mixes digits ``0..r``, so the matrix is invertible and
    keeps every elementary interval's count.

    The bits are PyTorch's: the low bits of a Mersenne Twister's 32-bit outputs (its
    ``randint(2, ...)``), seeded with ``seed``'s low 32 bits, first the shift's ``(dimension,
    30)`` bits (bit ``k`` weighs ``2**k``), then the ``(dimension, 30, 30)`` matrices row by
    row, of which the part above the diagonal is drawn and unused."""
    twister = np.random.MT19937()
    twister.state = np.random.RandomState(seed & 0xFFFFFFFF).get_state(legacy=False)
    dimension = directions.shape[1]
    shift_bits = (twister.random_raw(dimension * MAXBIT) & 1).reshape(dimension, MAXBIT)
    shift = shift_bits.astype(np.int64) @ (1 << np.arange(MAXBIT, dtype=np.int64))
    digit_bits = 1 << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)  # digit r sits at bit 29 - r
    scrambled = np.zeros_like(directions)
    for start in range(0, dimension, _SCRAMBLE_CHUNK):  # (the draws of 900 bits per dimension)
        part = slice(start, min(start + _SCRAMBLE_CHUNK, dimension))
        count = part.stop - part.start
        matrix = np.tril((twister.random_raw(count * MAXBIT * MAXBIT) & 1).astype(np.int64)
                         .reshape(count, MAXBIT, MAXBIT))
        matrix[:, np.arange(MAXBIT), np.arange(MAXBIT)] = 1
        columns = (matrix * digit_bits[:, None]).sum(axis=1)  # input digit c's output digits
        for c in range(MAXBIT):
            scrambled[:, part] ^= ((directions[:, part] >> (MAXBIT - 1 - c)) & 1) * columns[:, c]
    return shift, scrambled


_SCRAMBLE_CHUNK = 1024
