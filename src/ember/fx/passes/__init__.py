"""Passes over :class:`~ember.fx.GraphModule` graphs."""
