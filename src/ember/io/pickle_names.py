"""What the weights-only pickle readers (Ember files' and ``torch.save`` files') share about
the names a pickle gives: Python 2's names, mapped as pickle maps them, and copyreg's
extension codes, which they refuse, as ``torch.load(..., weights_only=True)`` does."""

from __future__ import annotations

import _compat_pickle
import pickle
from typing import Any

from ember.errors import CheckpointError

EXTENSIONS = ("EXT1", "EXT2", "EXT4")


def python3_name(module: str, name: str) -> tuple[str, str]:
    """The Python 3 ``(module, name)`` of a global a protocol 0-2 pickle names by its Python 2
    name, as ``pickle`` maps it with ``fix_imports`` (``__builtin__.xrange``:
    ``builtins.range``); any other name as it is.

    Example:
        >>> python3_name("UserDict", "IterableUserDict")
        ('collections', 'UserDict')
    """
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def extension_error(where: str) -> CheckpointError:
    """The refusal of an EXT1/EXT2/EXT4 opcode: a global named by a code in copyreg's
    process-wide extension registry, which ``pickle`` resolves from its cache past
    ``find_class`` (the allow-list)."""
    return CheckpointError(f"{where}: the pickle names a global by a copyreg extension "
                           "code (opcode EXT1/EXT2/EXT4), which a weights-only load does not "
                           "read, as torch.load; the file is crafted or not from torch.save/"
                           "ember.save")


def refuse_extension(reader: Any) -> None:
    """An unpickler's EXT1/EXT2/EXT4 opcode, refused."""
    raise extension_error(reader.where)


def without_extensions(dispatch: dict[int, Any]) -> dict[int, Any]:
    """An unpickler's ``dispatch`` table with the extension opcodes refused."""
    return {**dispatch, **{op[0]: refuse_extension
                           for op in (getattr(pickle, name) for name in EXTENSIONS)}}
