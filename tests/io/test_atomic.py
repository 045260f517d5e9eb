"""Atomic saves: an exception or a killed process mid-save never destroys the old checkpoint."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

import ember
from ember.io import safetensors_file


def old_checkpoint(path):
    ember.save({"w": ember.arange(1000.0), "epoch": 1}, path)
    return path.read_bytes()


@pytest.mark.parametrize("exc", [OSError("disk full"), KeyboardInterrupt()])
def test_exception_inside_the_writer_keeps_the_old_file(exc, tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    before = old_checkpoint(path)
    calls = []
    real = safetensors_file.write_array

    def failing(f, a):
        if calls:  # the header and one tensor are already in the temporary file
            raise exc
        calls.append(1)
        real(f, a)

    monkeypatch.setattr(safetensors_file, "write_array", failing)
    with pytest.raises(type(exc)):
        ember.save({"a": ember.ones(5000), "b": ember.zeros(5000), "epoch": 2}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # the temporary file is gone
    assert ember.load(path)["epoch"] == 1


KILLER = """
import os, signal, sys
import ember
from ember.io import safetensors_file, atomic
path, where = sys.argv[1], sys.argv[2]
die = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
if where == "mid-data":
    real = safetensors_file.write_array
    def write_then_die(f, a):
        real(f, a)
        f.flush()
        die()
    safetensors_file.write_array = write_then_die
else:  # everything written, killed before the rename
    atomic.os.fsync = die
ember.save({"w": ember.ones(100_000), "v": ember.ones(100_000), "epoch": 2}, path)
"""


@pytest.mark.parametrize("where", ["mid-data", "before-rename"])
def test_killed_process_keeps_the_old_file(where, tmp_path):
    path = tmp_path / "ckpt.safetensors"
    before = old_checkpoint(path)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLER), str(path), where],
                          capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    assert path.read_bytes() == before
    assert ember.load(path)["epoch"] == 1
    leftovers = [n for n in os.listdir(tmp_path) if n != "ckpt.safetensors"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.safetensors.")
    partial = tmp_path / leftovers[0]
    if where == "mid-data":  # the partial file is detectably broken, not silently short
        with pytest.raises(ember.errors.CheckpointError, match="truncated"):
            ember.load(partial)
    else:  # complete, only never renamed
        assert ember.load(partial)["epoch"] == 2


def test_permissions(tmp_path):
    path = tmp_path / "new.safetensors"
    ember.save({"a": 1}, path)
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask
    os.chmod(path, 0o600)
    ember.save({"a": 2}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_symlinks_are_written_through(tmp_path):
    target = tmp_path / "real.safetensors"
    ember.save({"a": 1}, target)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(target)
    ember.save({"a": 2}, link)
    assert link.is_symlink() and ember.load(target) == {"a": 2}


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="the directory .*/no does not exist"):
        ember.save({"a": 1}, tmp_path / "no" / "ckpt.safetensors")
    assert os.listdir(tmp_path) == []


def test_overwrite_many_times(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    for epoch in range(5):
        ember.save({"w": ember.full((10,), float(epoch)), "epoch": epoch}, path)
        assert ember.load(path)["epoch"] == epoch
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_a_directory_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    (tmp_path / "ckpt").mkdir()
    monkeypatch.setattr(safetensors_file, "write_array", lambda *a: pytest.fail("wrote data"))
    with pytest.raises(IsADirectoryError, match=r"ckpt: it is a directory"):
        ember.save({"w": ember.ones(2)}, tmp_path / "ckpt")
    assert os.listdir(tmp_path) == ["ckpt"]
