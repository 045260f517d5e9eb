"""Saving and loading: safe checkpoints (``ember.save``/``ember.load``) on safetensors + JSON.

A checkpoint is a safetensors file whose header carries the saved object's structure as JSON
(see :mod:`ember.io.checkpoint` for the format), so loading a file from an untrusted source can
fail but runs no code. Only objects that are not data (a whole module) are pickled, and
loading those takes ``weights_only=False``, as in PyTorch. Flat safetensors files, as the
``safetensors`` package's: ``save_file``/``load_file``/``load_metadata``, ``safe_open`` (lazy
reads and slices) and ``save_model``/``load_model`` (tied weights stored once).
"""

from ember.fx.to_folder import FILES as FX_FILES
from ember.io.checkpoint import load, save
from ember.io.flat_files import load_file, save_file
from ember.io.lazy_reads import safe_open
from ember.io.model_files import load_model, save_model
from ember.io.safetensors_file import load_metadata, read_arrays, write_arrays
from ember.jit.serialize import FILES

FILES.write, FILES.read = write_arrays, read_arrays  # ember.jit.save/load's file format
FX_FILES.save = save  # ember.fx.GraphModule.to_folder's files

__all__ = ["load", "load_file", "load_metadata", "load_model", "safe_open", "save", "save_file",
           "save_model"]
