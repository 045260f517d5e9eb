"""Batch norm under :func:`vmap`, as ``torch.func.replace_all_batch_norm_modules_``."""

from __future__ import annotations

from ember.nn.module import Module
from ember.nn.normalization import _BatchNorm

__all__ = ["replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Makes every BatchNorm layer in ``root`` (``root`` included) stop tracking running
    statistics, in place: their ``running_mean``, ``running_var`` and ``num_batches_tracked``
    become ``None``, so they normalize with the statistics of each batch, in training and in
    eval mode alike. Updating a running buffer shared by all the models of a :func:`vmap` would
    mix them; this is the fix ``torch.func`` offers. Returns ``root``.

    Example:
        >>> model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
        >>> _ = ember.func.replace_all_batch_norm_modules_(model)
        >>> model[1].running_mean is None, model[1].track_running_stats
        (True, False)
    """
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
