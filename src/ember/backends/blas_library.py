"""What the BLAS NumPy is linked against is (Ember's GEMMs run in it): the answer
``backends.mkl`` and ``backends.openmp`` give."""

from __future__ import annotations

from ember.backend.threads import blas_info


def uses(*, internal_api: str | None = None, threading_layer: str | None = None) -> bool:
    """Whether a BLAS NumPy loaded has this ``internal_api`` ("mkl", "openblas") or
    ``threading_layer`` ("openmp", "pthreads")."""
    for lib in blas_info():
        if internal_api is not None and lib.get("internal_api") == internal_api:
            return True
        if threading_layer is not None and lib.get("threading_layer") == threading_layer:
            return True
    return False
