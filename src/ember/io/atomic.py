"""Atomic file replacement: a crash mid-write never destroys the file that was there before.

The new contents go to a temporary file in the target's directory (same file system, so the
final rename is atomic), are flushed and fsynced, and only then ``os.replace`` the target; the
directory is fsynced too so the rename itself survives a power cut. If anything raises while
writing (including ``KeyboardInterrupt``) the temporary file is removed and the old file is
untouched. A process killed outright (``SIGKILL``) can leave a ``.<name>.*.tmp`` file behind,
never a half-written target. The target is a new file: other hard links to the old one keep
the old contents (``open(path, "wb")`` would write into the file they share).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0)  # the only portable way to read it; set straight back
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Yields a binary file; on a clean exit its contents atomically replace ``path``.

    Example:
        >>> with atomic_write(tmp_path / "a.bin") as f:
        ...     _ = f.write(b"data")
        >>> (tmp_path / "a.bin").read_bytes()
        b'data'
    """
    target = os.path.realpath(os.fspath(path))  # write through a symlink, as open() would
    directory, name = os.path.split(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot write {os.fspath(path)}: the directory {directory} does "
                                "not exist (create it first, e.g. os.makedirs)")
    if os.path.isdir(target):  # (said before the data is written, not at the rename)
        raise IsADirectoryError(f"cannot write {os.fspath(path)}: it is a directory; give the "
                                "name of a file (in it: os.path.join(path, name))")
    if os.path.exists(target) and not os.access(target, os.W_OK):  # (as open(path, "wb"))
        raise PermissionError(f"cannot write {os.fspath(path)}: the file is read-only; make it "
                              "writable first (os.chmod) or save under another name")
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        try:  # keep an existing file's permissions; a new one gets the usual 0o666 & ~umask
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
