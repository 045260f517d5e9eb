"""Graph optimizations over :mod:`ember.fx` (``torch.fx.experimental``'s)."""
