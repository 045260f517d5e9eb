"""``get_unsafe_globals_in_checkpoint``: which classes and functions a checkpoint's pickles
name that ``ember.load(..., weights_only=True)`` would refuse, as
``torch.serialization.get_unsafe_globals_in_checkpoint`` lists them: read statically, by
disassembling the pickles (nothing is unpickled), so the list is what to review before
allowing it with ``ember.serialization.add_safe_globals``.
"""

from __future__ import annotations

import io
import pickletools
import zipfile

from ember.errors import CheckpointError
from ember.io import checkpoint, pickle_names, safe_globals, torch_file
from ember.io import safetensors_file as st

_MARK = object()  # (a MARK on the modelled stack)
_MEMO_PUT = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"}
_TEXT = (pickletools.pyunicode, pickletools.pybytes_or_str)  # (ops pushing their str argument)
# (the names an Ember file's own pickles use to rebuild the tensors inside an object)
_EMBER_REBUILDS = {("ember.tensor", "_unpickled"), ("ember.tensor_copy", "rebuilt")}


class _Unlistable(Exception):
    """A pickle whose stack :func:`_names` cannot follow (what its message says)."""


def _pop(stack: list[object], op: pickletools.OpcodeInfo) -> None:
    """Takes what ``op`` takes off the modelled stack: its operands, from the last MARK on for
    the ops that take a MARK's items (as the unpickler; POP of a bare MARK drops it)."""
    before = op.stack_before
    if pickletools.stackslice in before:
        if _MARK not in stack:
            raise _Unlistable("no MARK before it")
        del stack[len(stack) - 1 - stack[::-1].index(_MARK):]
        before = before[:before.index(pickletools.markobject)]
    if op.name == "POP" and stack and stack[-1] is _MARK:
        before = []
        stack.pop()
    if len(stack) < len(before) or _MARK in stack[len(stack) - len(before):]:
        raise _Unlistable("a stack underflow")
    del stack[len(stack) - len(before):]


def _names(data: bytes, where: str, torch: bool) -> set[tuple[str, str]]:
    """The ``(module, name)`` of each GLOBAL, INST and STACK_GLOBAL in the pickle ``data``,
    following its stack as the unpickler does (STACK_GLOBAL's strings pushed, copied or
    fetched from the memo; one it cannot follow, such as a computed name, is a
    CheckpointError, never a short list), Python 2's names mapped as the reader maps them
    (``__builtin__.set``: ``builtins.set``): ``torch``, in every pickle, as ``torch.load``;
    else in protocol 0-2 ones, as ``pickle``."""
    found: set[tuple[str, str]] = set()
    protocol = 0
    stack: list[object] = []  # what each value is: a string, a MARK, or None for the rest
    memo: dict[int, object] = {}
    op = None
    try:
        for op, arg, pos in pickletools.genops(data):
            name = op.name
            protocol = int(arg) if name == "PROTO" else protocol
            if name in pickle_names.EXTENSIONS:
                raise pickle_names.extension_error(where)
            global_ = (str(arg).split(" ", 1) if name in ("GLOBAL", "INST") else
                       stack[-2:] if name == "STACK_GLOBAL" else None)
            if global_ is not None:
                if not (len(global_) == 2 and all(isinstance(s, str) for s in global_)):
                    raise _Unlistable(f"{name} at byte {pos} takes a name it computes")
                found.add(pickle_names.python3_name(*global_) if torch or protocol < 3
                          else tuple(global_))
            if name in _MEMO_PUT or name == "DUP":  # (they read the top, and keep it)
                if not stack or stack[-1] is _MARK:
                    raise _Unlistable("an empty stack")
                if name == "DUP":
                    stack.append(stack[-1])
                else:
                    memo[len(memo) if name == "MEMOIZE" else int(arg)] = stack[-1]
                continue
            _pop(stack, op)
            pushed: object = None
            if name in ("GET", "BINGET", "LONG_BINGET"):
                pushed = memo[int(arg)]
            elif name == "MARK":
                pushed = _MARK
            elif len(op.stack_after) == 1 and op.stack_after[0] in _TEXT and isinstance(arg, str):
                pushed = arg
            stack.extend([pushed] * len(op.stack_after))
    except CheckpointError:
        raise
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{where}: a damaged pickle ({e})") from None
    except (_Unlistable, KeyError) as e:
        what = f"a memo entry it never stored ({e})" if isinstance(e, KeyError) else e
        raise CheckpointError(f"{where}: a pickle that cannot be listed statically ("
                              f"{op.name if op else ''}: {what}); it is crafted or damaged, "
                              "and a weights-only load refuses it or fails") from None
    return found


def _torch_names(handle: io.BufferedIOBase, where: str) -> tuple[set, set]:
    """The names in a zip-format ``torch.save`` file's pickle, and those Ember rebuilds."""
    try:
        with zipfile.ZipFile(handle) as archive:
            pickles = [n for n in archive.namelist()
                       if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(pickles) != 1:
                raise CheckpointError(f"{where}: a zip archive without one <name>/data.pkl; "
                                      "it is not a torch.save file")
            data = archive.read(pickles[0])
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise CheckpointError(f"{where}: not a readable zip archive ({e})") from None
    reader = torch_file._TorchUnpickler(io.BytesIO(), where, None, None, True, {})  # noqa: SLF001
    return _names(data, where, torch=True), set(reader.names)


def _ember_names(handle: io.BufferedIOBase, where: str) -> set[tuple[str, str]]:
    """The names in the pickles of an Ember checkpoint (none in a plain safetensors file)."""
    header = st.read_header(handle, where, torch_hint=False)
    doc = header.metadata.get(checkpoint.TREE_KEY)
    if doc is None:
        return set()
    blobs: set[str] = set()

    def walk(x: object) -> None:
        if isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            if isinstance(x.get("$pickle"), str) and x["$pickle"] in header.entries:
                blobs.add(x["$pickle"])
            for v in x.values():
                walk(v)

    try:
        walk(checkpoint._tree(doc, where))  # noqa: SLF001
    except RecursionError:
        raise CheckpointError(f"{where}: the checkpoint tree is nested too deeply") from None
    return set().union(*(_names(st.read_array(handle, header, name, where).tobytes(), where,
                                torch=False) for name in sorted(blobs))) - _EMBER_REBUILDS


def get_unsafe_globals_in_checkpoint(f: st.PathOrFile) -> list[str]:
    """The ``"module.Name"`` of each class or function the pickles in checkpoint ``f`` name
    that ``ember.load`` would refuse with ``weights_only=True`` (neither rebuilt by Ember nor
    allowed by :func:`add_safe_globals`), sorted; read without unpickling anything, as
    ``torch.serialization.get_unsafe_globals_in_checkpoint``. ``f``: an Ember checkpoint or
    a zip-format ``torch.save`` file (a path, or a binary file, left where it was, so that
    ``ember.load`` can read it next).

    Example:
        >>> ember.save({"cfg": MyConfig(), "w": ember.ones(2)}, path)
        >>> ember.serialization.get_unsafe_globals_in_checkpoint(path)
        ['mymodule.MyConfig']
    """
    where = st.source_name(f)
    handle, owned = st.open_source(f)
    start = handle.tell()
    try:
        head = handle.read(32)
        handle.seek(start)
        if head.startswith(torch_file.ZIP_MAGIC):
            names, rebuilt = _torch_names(handle, where)
            names -= rebuilt
        elif torch_file.is_legacy(head):
            raise CheckpointError(f"{where}: a torch.save file of the format before PyTorch 1.6; "
                                  "as torch.serialization's, this reads zip-format ones only")
        else:
            names = _ember_names(handle, where)
    finally:  # (a caller's file back where it was, for the ember.load that follows)
        if owned:
            handle.close()
        else:
            handle.seek(start)
    return sorted(f"{m}.{n}" for m, n in names if safe_globals.allowed(m, n) is None)
