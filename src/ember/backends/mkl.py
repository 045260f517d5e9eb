"""``ember.backends.mkl``: whether Intel MKL computes Ember's GEMMs (the ``mkl`` package is
installed, or NumPy's BLAS is MKL).

Example:
    >>> ember.backends.mkl.is_available() in (True, False)
    True
"""

from ember.backends.blas_library import uses


def is_available() -> bool:
    """True when MKL runs Ember's large GEMMs: the ``mkl`` package is installed
    (:mod:`ember.backend.mkl_gemm`) or NumPy's BLAS is MKL.

    Example:
        >>> isinstance(ember.backends.mkl.is_available(), bool)
        True
    """
    return uses(internal_api="mkl")
