"""Saving and loading: safe checkpoints (``ember.save``/``ember.load``) on safetensors + JSON.

No pickle anywhere: a checkpoint is a safetensors file whose header carries the saved
object's structure as JSON (see :mod:`ember.io.checkpoint` for the format), so loading a file
from an untrusted source can fail but never runs code.
"""

from ember.io.checkpoint import load, load_file, load_metadata, save, save_file

__all__ = ["load", "load_file", "load_metadata", "save", "save_file"]
