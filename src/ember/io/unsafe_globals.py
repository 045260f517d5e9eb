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

_NO_PUSH = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"}
# (the names an Ember file's own pickles use to rebuild the tensors inside an object)
_EMBER_REBUILDS = {("ember.tensor", "_unpickled"), ("ember.tensor_copy", "rebuilt")}


def _names(data: bytes, where: str, torch: bool) -> set[tuple[str, str]]:
    """The ``(module, name)`` of each GLOBAL and STACK_GLOBAL in the pickle ``data`` (the
    strings STACK_GLOBAL takes found as pushed, or fetched from the memo), Python 2's names
    mapped as the reader maps them (``__builtin__.set``: ``builtins.set``): ``torch``, in
    every pickle, as ``torch.load``; else in protocol 0-2 ones, as ``pickle``."""
    found: set[tuple[str, str]] = set()

    def add(module: str, name: str) -> None:
        found.add(pickle_names.python3_name(module, name) if torch or protocol < 3
                  else (module, name))

    protocol = 0
    pushed: list[object] = []  # what each opcode pushed (a string, or None for the rest)
    memo: dict[int, object] = {}
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in pickle_names.EXTENSIONS:
                raise pickle_names.extension_error(where)
            if op.name == "GLOBAL":
                add(*str(arg).split(" ", 1))
            elif op.name == "STACK_GLOBAL" and len(pushed) >= 2:
                module, name = pushed[-2:]
                if isinstance(module, str) and isinstance(name, str):
                    add(module, name)
            protocol = int(arg) if op.name == "PROTO" else protocol
            if op.name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(arg)] = pushed[-1] if pushed else None
            elif op.name in ("GET", "BINGET", "LONG_BINGET"):
                pushed.append(memo.get(int(arg)))
            elif op.name not in _NO_PUSH:
                pushed.append(arg if isinstance(arg, str) and op.name != "GLOBAL" else None)
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{where}: a damaged pickle ({e})") from None
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
    a zip-format ``torch.save`` file (a path or a binary file).

    Example:
        >>> ember.save({"cfg": MyConfig(), "w": ember.ones(2)}, path)
        >>> ember.serialization.get_unsafe_globals_in_checkpoint(path)
        ['mymodule.MyConfig']
    """
    where = st.source_name(f)
    handle, owned = st.open_source(f)
    try:
        start = handle.tell()
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
    finally:
        if owned:
            handle.close()
    return sorted(f"{m}.{n}" for m, n in names if safe_globals.allowed(m, n) is None)
