"""``ember.backends``: ``torch.backends``' switches and "is it there" queries, answering for
this build: Ember computes with NumPy on the CPU, so there is no cuDNN, CUDA, MPS or oneDNN;
MKL and OpenMP are reported from the BLAS NumPy is linked against.

The switches of libraries Ember does not have (``cudnn.benchmark``, ``cudnn.deterministic``
…) are recorded and read back, as PyTorch's are on a build without them, so code that sets
them runs unchanged; they change no result. As in PyTorch, ``cudnn.deterministic`` is its
own flag, separate from :func:`ember.use_deterministic_algorithms`, while
``cuda.matmul.allow_tf32`` is another spelling of :func:`ember.set_float32_matmul_precision`
(True is ``"high"``).

Example:
    >>> ember.backends.cudnn.is_available(), ember.backends.mps.is_available()
    (False, False)
    >>> ember.backends.cudnn.benchmark = True
    >>> ember.backends.cudnn.benchmark
    True
    >>> ember.backends.cudnn.benchmark = False
"""

from ember.backends import cuda, cudnn, mha, mkl, mkldnn, mps, openmp, quantized

__all__ = ["cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "quantized"]
