"""Utilities under PyTorch's paths: ``ember.utils.data`` is :mod:`ember.data`."""

from ember.utils import checkpoint, data
