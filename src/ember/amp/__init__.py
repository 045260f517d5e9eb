"""Mixed precision: :class:`autocast` (op policy by one table) and :class:`GradScaler` (loss
scaling that skips steps with inf/NaN gradients), as ``torch.amp``."""

from ember.amp.autocast_mode import *  # noqa: F403
from ember.amp.autocast_mode import __all__ as _autocast_names
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", *_autocast_names]
