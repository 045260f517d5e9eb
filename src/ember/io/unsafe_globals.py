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

_TEXT = (pickletools.pyunicode, pickletools.pybytes_or_str)  # (ops pushing their str argument)
_KINDS = {"PROTO": "proto", "GLOBAL": "global", "INST": "global", "STACK_GLOBAL": "stack",
          "MEMOIZE": "keep", "PUT": "keep", "BINPUT": "keep", "LONG_BINPUT": "keep",
          "DUP": "keep", "GET": "get", "BINGET": "get", "LONG_BINGET": "get", "MARK": "mark",
          "POP": "pop", **dict.fromkeys(pickle_names.EXTENSIONS, "extension")}
# (the names an Ember file's own pickles use to rebuild the tensors inside an object)
_EMBER_REBUILDS = {("ember.tensor", "_unpickled"), ("ember.tensor_copy", "rebuilt")}


class _Unlistable(Exception):
    """A pickle whose stack :func:`_names` cannot follow (what its message says)."""


def _shape(op: pickletools.OpcodeInfo) -> tuple[str | None, bool, int, bool, bool]:
    """What ``op`` does to the stack: its kind (one :func:`_names` treats on its own), whether
    it takes a MARK's items (from the last MARK on), how many values it takes below them or
    alone, whether it pushes one, and whether that is its own string argument."""
    before, after = op.stack_before, op.stack_after
    sliced = pickletools.stackslice in before
    takes = before.index(pickletools.markobject) if sliced else len(before)
    return (_KINDS.get(op.name), sliced, takes, bool(after),
            len(after) == 1 and after[0] in _TEXT)


_SHAPES = {op.name: _shape(op) for op in pickletools.opcodes}


def _take(stack: list[object], marks: list[int], sliced: bool, takes: int) -> None:
    """Takes an opcode's operands off the modelled stack, as the unpickler does: ``takes``
    values, after the items from the last MARK on where ``sliced``. ``marks``: the stack's
    length at each MARK still open (pickle's metastack) after a 0 for the stack's bottom, so
    this costs what it pops."""
    if sliced:
        if len(marks) == 1:
            raise _Unlistable("no MARK before it")
        del stack[marks.pop():]
    if takes and len(stack) - takes < marks[-1]:
        raise _Unlistable("a stack underflow")
    del stack[len(stack) - takes:]


def _lines(data: bytes, pos: int) -> list[str]:
    """The module and name of the GLOBAL or INST at byte ``pos``: its two lines, as the
    unpickler reads them (pickletools joins them with a space, which a name may hold)."""
    first = data.index(b"\n", pos + 1)
    return [data[pos + 1:first].decode(), data[first + 1:data.index(b"\n", first + 1)].decode()]


def _names(data: bytes, where: str, torch: bool) -> set[tuple[str, str]]:
    """The ``(module, name)`` of each GLOBAL, INST and STACK_GLOBAL in the pickle ``data``,
    following its stack as the unpickler does (STACK_GLOBAL's strings pushed, copied or
    fetched from the memo; one it cannot follow, such as a computed name, is a
    CheckpointError, never a short list), Python 2's names mapped as the reader maps them
    (``__builtin__.set``: ``builtins.set``): ``torch``, in every pickle, as ``torch.load``;
    else in protocol 0-2 ones, as ``pickle``."""
    found: set[tuple[str, str]] = set()
    protocol = 0
    stack: list[object] = []  # what each value is: a string, or None for the rest
    marks = [0]  # (the stack's length at each open MARK, as the unpickler's metastack)
    memo: dict[int, object] = {}
    at: tuple = ()  # (the opcode read, and where)
    try:
        for op, arg, pos in pickletools.genops(data):
            kind, sliced, takes, gives, text = _SHAPES[op.name]
            if kind is not None:
                at = (op.name, pos)
                if kind == "proto":
                    protocol = int(arg)
                elif kind == "extension":
                    raise pickle_names.extension_error(where)
                elif kind == "mark":
                    marks.append(len(stack))
                    continue
                elif kind == "keep":  # (DUP and the memo stores read the top and keep it)
                    if len(stack) == marks[-1]:
                        raise _Unlistable("an empty stack")
                    if op.name == "DUP":
                        stack.append(stack[-1])
                    else:
                        memo[len(memo) if op.name == "MEMOIZE" else int(arg)] = stack[-1]
                    continue
                elif kind == "pop" and len(marks) > 1 and marks[-1] == len(stack):
                    marks.pop()  # (POP of a bare MARK drops it, as the unpickler)
                    continue
                elif kind in ("global", "stack"):
                    names = (_lines(data, pos) if kind == "global" else
                             stack[max(len(stack) - 2, marks[-1]):])
                    if not (len(names) == 2 and all(isinstance(n, str) for n in names)):
                        raise _Unlistable("a name it computes or has not pushed")
                    found.add(pickle_names.python3_name(*names) if torch or protocol < 3
                              else (names[0], names[1]))
            if sliced or takes:
                at = (op.name, pos)
                _take(stack, marks, sliced, takes)
            if gives:
                stack.append(memo[int(arg)] if kind == "get"
                             else arg if text and isinstance(arg, str) else None)
    except CheckpointError:
        raise
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{where}: a damaged pickle ({e})") from None
    except (_Unlistable, KeyError) as e:
        what = f"a memo entry it never stored ({e})" if isinstance(e, KeyError) else e
        raise CheckpointError(f"{where}: a pickle that cannot be listed statically ("
                              f"{' at byte '.join(map(str, at))}: {what}); it is crafted "
                              "or damaged, and a weights-only load refuses it or fails"
                              ) from None
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
            data = torch_file.read_record(archive, pickles[0])
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
