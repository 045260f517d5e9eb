"""Downloads for ``ember.hub``: :func:`download_url_to_file` (urllib, a progress bar on
stderr, an optional SHA-256 prefix check, an atomic move into place) and
:func:`load_state_dict_from_url`, which caches a checkpoint under the hub directory and loads
it with :func:`ember.load` — safetensors and JSON, never pickle, so a checkpoint from the
network can fail to load but cannot run code.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
import uuid
import zipfile
from typing import Any, BinaryIO

from ember.errors import CheckpointError
from ember.hub.cache import get_dir
from ember.io import load
from ember.io.torch_file import _ZIP_ERRORS

__all__ = ["download_url_to_file", "load_state_dict_from_url"]

_CHUNK = 128 * 1024
# a file name's hash prefix, as PyTorch names checkpoints: "resnet18-f37072fd.safetensors"
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")


class _Progress:
    """Bytes received so far (and of how many, when the server said), redrawn on one stderr
    line at most ten times a second; nothing when disabled."""

    def __init__(self, total: int | None, enabled: bool) -> None:
        self.total, self.enabled, self.done, self.shown = total, enabled, 0, 0.0

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self.shown >= 0.1 or self.done == self.total):
            self.shown = now
            of = "" if not self.total else (f" / {_mib(self.total)} "
                                            f"({100 * self.done // self.total}%)")
            sys.stderr.write(f"\r{_mib(self.done)}{of}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _mib(n: int) -> str:
    return f"{n / 2 ** 20:.1f} MiB"


def download_url_to_file(url: str, dst: str | os.PathLike, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Downloads ``url`` to the file ``dst``.

    The bytes go to a temporary file beside ``dst``, which replaces ``dst`` only once the
    download is complete (as long as the server's ``Content-Length`` says, when it says) and,
    with ``hash_prefix``, its SHA-256 hex digest starts with it; on failure nothing is left
    behind. ``progress`` shows a progress bar on stderr. Any URL urllib opens works
    (``file://`` too).

    Raises:
        RuntimeError: when the digest does not start with ``hash_prefix`` (naming both) or the
            download ends early.
        urllib.error.URLError: when the URL cannot be read.

    Example:
        >>> ember.hub.download_url_to_file("https://example.invalid/w.safetensors",
        ...                                "/tmp/w.safetensors")  # doctest: +SKIP
    """
    import urllib.request  # (here: urllib.request and http.client are ~30 ms of import ember)

    dst = os.path.expanduser(os.fspath(dst))
    request = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    with urllib.request.urlopen(request) as response:
        bar = _Progress(_announced_length(response), progress)
        partial, out = _partial_file(dst)
        try:
            with out:
                digest = _copy(response, out, bar)
            if bar.total is not None and bar.done != bar.total:  # (urllib does not check)
                raise RuntimeError(f"download_url_to_file: {url} ended after {bar.done} of the "
                                   f"{bar.total} bytes its server announced; {dst} was not "
                                   "written. Hint: the connection was cut; try again")
            if hash_prefix is not None and not digest.startswith(hash_prefix):
                raise RuntimeError(f"download_url_to_file: invalid hash value of {url} (expected "
                                   f"a SHA-256 starting with \"{hash_prefix}\", got "
                                   f"\"{digest}\"); {dst} was not written. Hint: the file may "
                                   "be corrupt or changed on the server; check the URL and "
                                   "the expected hash")
            os.replace(partial, dst)
        finally:
            if os.path.exists(partial):
                os.remove(partial)


def _announced_length(response: Any) -> int | None:
    """The body's length as the server announced it, read as ``http.client`` reads it: none
    for a chunked body (RFC 7230 3.3.3: the length is then ignored) or a malformed or
    negative ``Content-Length`` (the body is then read to its end)."""
    length = response.headers.get("Content-Length")
    if not length or getattr(response, "chunked", False):
        return None
    try:
        return int(length) if int(length) >= 0 else None
    except ValueError:
        return None


def _partial_file(dst: str) -> tuple[str, BinaryIO]:
    """A new file beside ``dst`` (``dst.<random>.partial``), open for writing, with the
    permissions the umask gives any new file (``tempfile``'s would be private)."""
    while True:
        partial = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            return partial, open(partial, "xb")  # noqa: SIM115 - the caller closes it
        except FileExistsError:
            continue


def _copy(source: Any, out: BinaryIO, bar: _Progress) -> str:
    """Copies ``source`` to ``out`` in chunks; the SHA-256 hex digest of what was copied."""
    sha256 = hashlib.sha256()
    try:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
            sha256.update(chunk)
            bar.update(len(chunk))
    finally:
        bar.close()
    return sha256.hexdigest()


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """The object saved at ``url`` (a state dict, usually), downloaded once into
    ``model_dir`` (default: ``<ember.hub.get_dir()>/checkpoints``) and read from there after.

    The file must be one :func:`ember.load` reads: an Ember checkpoint, any safetensors
    file (which loads as a flat ``{name: tensor}`` dict) or a ``torch.save`` file, whose
    tensors and plain data are rebuilt without running code it names. ``file_name`` names
    the cached file (default: the URL's last path part); with ``check_hash``, a hex prefix in
    that name after a dash (``name-<sha256 prefix>.ext``) must start the file's SHA-256. A zip
    archive holding one file (PyTorch's legacy layout) is extracted beside it and that file
    loaded.
    ``map_location`` is :func:`ember.load`'s; ``weights_only`` is accepted for PyTorch
    compatibility and ignored (the hub only ever loads data).

    Example:
        >>> sd = ember.hub.load_state_dict_from_url(
        ...     "https://example.invalid/models/tiny-3a5b09c1.safetensors",
        ...     check_hash=True)  # doctest: +SKIP
    """
    del weights_only
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        found = _HASH_IN_NAME.search(name) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress=progress)
    return load(_unzipped(cached, model_dir), map_location=map_location)


def _unzipped(cached: str, model_dir: str) -> str:
    """The checkpoint inside ``cached`` when it is a zip archive of that one file (PyTorch's
    legacy layout, such as older published ``.zip`` weights), extracted into ``model_dir``;
    else ``cached``. (A ``torch.save`` file is a zip archive of several records; a damaged
    archive is left to :func:`ember.load`, whose error names what is wrong with it.)"""
    if not zipfile.is_zipfile(cached):
        return cached
    try:
        archive = zipfile.ZipFile(cached)
    except _ZIP_ERRORS:
        return cached
    with archive:
        members = archive.infolist()
        if len(members) != 1 or members[0].is_dir():
            return cached
        # extracted into a new folder first, then moved into place: the member may carry the
        # archive's own name (w.pth holding w.pth), and extracting straight over the archive
        # being read would leave an empty file in the cache
        staging = tempfile.mkdtemp(prefix=".extracting-", dir=model_dir)
        try:
            extracted = _extract(archive, members[0], staging, cached)
            target = os.path.join(model_dir, os.path.relpath(extracted, staging))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(extracted, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target


def _extract(archive: zipfile.ZipFile, member: zipfile.ZipInfo, folder: str, where: str) -> str:
    """``archive.extract(member, folder)`` (which keeps it inside ``folder``); a damaged
    member raises a CheckpointError naming ``where``, not zipfile's bare error."""
    try:
        return archive.extract(member, folder)
    except _ZIP_ERRORS as e:
        if isinstance(e, OSError):  # (the disk's error, not the archive's)
            raise
        raise CheckpointError(f"{where}: cannot extract {member.filename} ({type(e).__name__}: "
                              f"{e}); the archive is corrupted") from None
