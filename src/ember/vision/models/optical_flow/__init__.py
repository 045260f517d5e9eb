"""torchvision's optical-flow models (``torchvision.models.optical_flow`` →
``ember.vision.models.optical_flow``) with torchvision's module names, so its state dicts
load. They take two (N, 3, H, W) images (H, W multiples of 8, at least 128 for the default
pyramid) and return the list of flow estimates. No weights are bundled: ``weights`` must be
None.

Example:
    >>> model = ember.vision.models.optical_flow.raft_small()
    >>> [f.shape for f in model(ember.randn(1, 3, 128, 128), ember.randn(1, 3, 128, 128),
    ...                         num_flow_updates=1)]
    [ember.Size([1, 2, 128, 128])]
"""

from ember.vision.models.optical_flow.raft import *  # noqa: F403
from ember.vision.models.optical_flow.raft import __all__ as _raft

__all__ = [*_raft]
