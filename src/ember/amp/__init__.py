"""Mixed precision: :class:`autocast` (op policy by one table) and :class:`GradScaler` (loss
scaling that skips steps with inf/NaN gradients), and :func:`custom_fwd` / :func:`custom_bwd`
for custom autograd Functions, as ``torch.amp``."""

from ember.amp.autocast_mode import *  # noqa: F403
from ember.amp.autocast_mode import __all__ as _autocast_names
from ember.amp.custom_function import custom_bwd, custom_fwd, is_autocast_available
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "custom_bwd", "custom_fwd", "is_autocast_available", *_autocast_names]
