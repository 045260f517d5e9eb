"""``torch.version``'s build facts for Ember: its version, and no CUDA, HIP or XPU toolkit.

Example:
    >>> ember.version.__version__ == ember.__version__, ember.version.cuda
    (True, None)
"""

__all__ = ["__version__", "cuda", "debug", "hip", "xpu"]

__version__ = "0.1.0"
cuda: str | None = None
hip: str | None = None
xpu: str | None = None
debug = False
