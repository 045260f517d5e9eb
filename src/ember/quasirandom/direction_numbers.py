"""Sobol' direction numbers from Joe and Kuo's table ``new-joe-kuo-6.21201``.

The table (S. Joe and F. Y. Kuo, "Constructing Sobol sequences with better two-dimensional
projections", SIAM J. Sci. Comput. 30, 2635-2654, 2008; the search criterion D(6), 21201
dimensions) is the one PyTorch's ``SobolEngine`` uses. For each dimension after the first it
holds a primitive polynomial over GF(2) of degree ``s`` (at most 18) and ``s`` initial odd
numbers ``m_k < 2**k``; the other direction numbers follow from the polynomial's recurrence.

``joe_kuo_6_21201.npz`` stores it compactly (about 380 kB): ``poly`` is each polynomial as an
integer (``x**s + a_1 x**(s-1) + ... + 1`` has bit ``s``, bits of ``a`` and bit 0 set), and
``m2`` ... ``m18`` are the initial numbers of each position ``k``, bit-packed: the dimensions
with degree at least ``k`` form a tail of the table (polynomials are sorted by degree), and each
of their ``m_k`` contributes its ``k - 1`` upper bits (the lowest bit is always 1).
``tests/test_quasirandom.py`` checks all 21201 dimensions against PyTorch's.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

MAXBIT = 30  # direction numbers have 30 bits, so a sequence has 2**30 points
MAXDIM = 21201
MAXDEG = 18
TABLE = "joe_kuo_6_21201.npz"


@functools.cache
def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Polynomials, their degrees and initial numbers ``m_1..m_18`` of dimensions 1..21200."""
    with resources.files(__package__).joinpath(TABLE).open("rb") as f, np.load(f) as data:
        poly = data["poly"].astype(np.int64)
        degree = (poly[:, None] >> np.arange(1, MAXDEG + 2) > 0).sum(axis=1)
        initial = np.ones((len(poly), MAXDEG), dtype=np.int64)
        for k in range(2, MAXDEG + 1):
            rows = int((degree >= k).sum())
            bits = np.unpackbits(data[f"m{k}"])[: rows * (k - 1)].reshape(rows, k - 1)
            upper = bits.astype(np.int64) @ (1 << np.arange(k - 2, -1, -1))
            initial[len(poly) - rows:, k - 1] = upper * 2 + 1
    return poly, degree, initial


def direction_numbers(dimension: int) -> np.ndarray:
    """The ``(MAXBIT, dimension)`` int64 direction numbers ``v[j, d] = m_{j+1} << (29 - j)``
    of the first ``dimension`` dimensions (the first is van der Corput's: every ``m`` is 1).

    Example:
        >>> direction_numbers(2)[:3]
        array([[536870912, 536870912],
               [268435456, 805306368],
               [134217728, 671088640]])
    """
    poly, degree, initial = _table()
    m = np.ones((MAXBIT, dimension), dtype=np.int64)
    for s in np.unique(degree[: dimension - 1]):
        dims = np.nonzero(degree[: dimension - 1] == s)[0]
        a = [(poly[dims] >> (s - i)) & 1 for i in range(s)]  # a[i] is a_i; a[0] is unused
        block = np.zeros((MAXBIT, len(dims)), dtype=np.int64)
        block[:s] = initial[dims, :s].T
        for j in range(s, MAXBIT):  # m_j = 2^s m_{j-s} ^ m_{j-s} ^ XOR_i a_i 2^i m_{j-i}
            block[j] = block[j - s] ^ (block[j - s] << s)
            for i in range(1, s):
                block[j] ^= a[i] * (block[j - i] << i)
        m[:, dims + 1] = block
    return m << (MAXBIT - 1 - np.arange(MAXBIT))[:, None]
