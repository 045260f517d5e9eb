"""Mixed precision: :class:`autocast` (op policy by one table) and :class:`GradScaler` (loss
scaling that skips steps with inf/NaN gradients), as ``torch.amp``."""

from ember.amp.autocast_mode import POLICY, autocast, get_autocast_dtype, is_autocast_enabled
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "POLICY", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
