"""Neural networks: ``ember.nn.functional`` (stateless ops under PyTorch's names); modules,
layers and initialisation build on it."""

from ember.nn import functional

__all__ = ["functional"]
