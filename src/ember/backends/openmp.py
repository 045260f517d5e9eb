"""``ember.backends.openmp``: whether OpenMP runs threads in Ember's kernels: NumPy's BLAS
built with OpenMP threading (Ember's own kernels use Python threads).

Example:
    >>> isinstance(ember.backends.openmp.is_available(), bool)
    True
"""

from ember.backends.blas_library import uses


def is_available() -> bool:
    """True when NumPy's BLAS threads with OpenMP.

    Example:
        >>> isinstance(ember.backends.openmp.is_available(), bool)
        True
    """
    return uses(threading_layer="openmp")
