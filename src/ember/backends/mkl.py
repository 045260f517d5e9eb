"""``ember.backends.mkl``: whether Intel MKL computes Ember's GEMMs (NumPy's BLAS is MKL).

Example:
    >>> ember.backends.mkl.is_available() in (True, False)
    True
"""

from ember.backends.blas_library import uses


def is_available() -> bool:
    """True when NumPy's BLAS, which runs Ember's GEMMs, is MKL (often it is OpenBLAS).

    Example:
        >>> isinstance(ember.backends.mkl.is_available(), bool)
        True
    """
    return uses(internal_api="mkl")
