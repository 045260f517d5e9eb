"""``torch.distributed.algorithms.model_averaging``: averaging parameters (not gradients)
over ranks every few steps, for local SGD.

Example:
    >>> from ember.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
    >>> averager = PeriodicModelAverager(period=4, warmup_steps=100)
"""

from ember.distributed.algorithms.model_averaging import averagers, utils

__all__ = ["averagers", "utils"]
