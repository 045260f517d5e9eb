"""ONNX models over protobuf's 2 GiB limit: their weights go to ``<f>.data`` beside the model,
as torch.onnx.export writes them (before, export raised protobuf's 'Failed to serialize
proto'). The limit is lowered here; /work/fuzz/sweep60g/big_model.py ran a real 2.3 GB model."""

import io
import os

import numpy as np
import onnx
import pytest

import ember
from ember.onnx import external
from tests.export.onnx_helpers import ort


def _model():
    ember.manual_seed(0)
    return ember.nn.Sequential(*[ember.nn.Linear(32, 32) for _ in range(3)]).eval()


def _run(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(external, "LIMIT", 8000)  # (each weight 4 KB, the model 13 KB)


def test_a_model_over_the_limit_is_written_with_external_data(tmp_path, small_limit):
    model, x = _model(), ember.randn(2, 32)
    path = tmp_path / "m.onnx"
    proto = ember.onnx.export(model, (x,), path, dynamic_axes={"input": {0: "b"}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    assert path.stat().st_size < 8000
    y = ember.randn(5, 32)
    np.testing.assert_allclose(_run(path, y), model(y).detach().numpy(), rtol=1e-5, atol=1e-6)
    # the returned model still holds its weights, and writing again replaces the data file
    assert all(w.raw_data for w in proto.graph.initializer)
    size = (tmp_path / "m.onnx.data").stat().st_size
    ember.onnx.export(model, (x,), path)
    assert (tmp_path / "m.onnx.data").stat().st_size == size


def test_external_data_true_writes_the_weights_outside(tmp_path):
    model, x = _model(), ember.randn(2, 32)
    ember.onnx.export(model, (x,), tmp_path / "m.onnx", external_data=True)
    assert (tmp_path / "m.onnx.data").stat().st_size >= 3 * 32 * 32 * 4
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", x), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    ember.onnx.export(model, (x,), tmp_path / "n.onnx", external_data=False)
    assert not (tmp_path / "n.onnx.data").exists()


def test_refusals_are_clear(tmp_path, small_limit, monkeypatch):
    model, x = _model(), ember.randn(2, 32)
    with pytest.raises(ember.onnx.ExportError, match="f must be a str or os.PathLike path"):
        ember.onnx.export(model, (x,), io.BytesIO())
    with pytest.raises(ember.onnx.ExportError, match=r"str or os.PathLike .*\(got bytes\)"):
        ember.onnx.export(model, (x,), b"m.onnx", external_data=True)
    with pytest.raises(ember.errors.ArgumentError, match="external_data must be True, False"):
        ember.onnx.export(model, (x,), tmp_path / "m.onnx", external_data="no")


def test_one_weight_over_the_limit_is_added_in_place_and_written_outside(tmp_path,
                                                                        monkeypatch):
    # a weight over protobuf's limit cannot be copied into a graph (the copy serializes it):
    # it was refused; it is added to the model in place and written to <f>.data
    monkeypatch.setattr(external, "LIMIT", 1000)  # (every weight over it)
    model, x = _model(), ember.randn(2, 32)
    proto = ember.onnx.export(model, (x,), tmp_path / "m.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    assert {"0.weight", "2.bias"} <= {w.name for w in proto.graph.initializer}
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", x), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_external_data_false_still_writes_a_model_over_the_limit_outside_as_torch(
        tmp_path, small_limit):
    # torch.onnx.export(..., external_data=False) writes a model past its limit with external
    # data all the same (ONNXProgram.save); Ember refused it before
    model, x = _model(), ember.randn(2, 32)
    ember.onnx.export(model, (x,), tmp_path / "m.onnx", external_data=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", x), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_an_interrupted_re_export_leaves_the_previous_model_whole(tmp_path, small_limit,
                                                                   monkeypatch):
    model, x = _model(), ember.randn(2, 32)
    path = tmp_path / "m.onnx"
    ember.onnx.export(model, (x,), path)
    want = _run(path, x)

    def interrupted(proto, where, **kwargs):  # (a full disk half-way through the weights)
        if not str(where).startswith(str(tmp_path)):  # (the checker's temporary copy)
            return save(proto, where, **kwargs)
        with open(str(where) + ".data", "wb") as out:
            out.write(b"\0" * 10)
        raise OSError("No space left on device")

    save = onnx.save_model
    monkeypatch.setattr(onnx, "save_model", interrupted)
    with pytest.raises(OSError, match="No space"):
        ember.onnx.export(_model(), (x,), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_array_equal(_run(path, x), want)


def test_external_data_true_with_only_small_weights_writes_one_file(tmp_path):
    # onnx keeps weights under 1 KiB inside the model, so no <f>.data is written: the export
    # raised FileNotFoundError moving the missing file into place
    model, x = ember.nn.Linear(3, 2).eval(), ember.randn(1, 3)
    ember.onnx.export(model, (x,), tmp_path / "m.onnx", external_data=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", x), model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def _small():
    ember.manual_seed(1)
    return ember.nn.Linear(3, 2).eval(), ember.randn(1, 3)


def test_a_symlink_keeps_pointing_at_its_target_which_gets_the_new_model(tmp_path):
    # the export renamed a new file onto the link: the link was gone, its target kept the old
    # model (as torch, the model is written where the link points, <f>.data beside the link)
    (tmp_path / "real").mkdir()
    target, link = tmp_path / "real" / "model.onnx", tmp_path / "link.onnx"
    target.write_bytes(b"old")
    link.symlink_to(target)
    for outside in (False, True):
        model, x = _small() if not outside else (_model(), ember.randn(2, 32))
        ember.onnx.export(model, (x,), link, external_data=outside)
        assert link.is_symlink() and os.readlink(link) == str(target)
        np.testing.assert_allclose(_run(link, x), model(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert (tmp_path / "link.onnx.data").exists()


def test_a_re_export_keeps_the_file_mode_and_hard_links(tmp_path):
    model, x = _small()
    path, other = tmp_path / "m.onnx", tmp_path / "other.onnx"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    os.link(path, other)
    ember.onnx.export(model, (x,), path)
    assert path.stat().st_mode & 0o777 == 0o640 and path.samefile(other)
    assert other.read_bytes() == path.read_bytes() != b"old"
    path.unlink()  # (one link again: replaced by a rename, the mode kept all the same)
    other.write_bytes(b"old")
    for outside in (False, True):
        ember.onnx.export(_model(), (ember.randn(2, 32),), other, external_data=outside)
        assert other.stat().st_mode & 0o777 == 0o640


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    # (a FIFO stands for a device such as /dev/null, which a root export replaced by a file)
    model, x = _small()
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ember.onnx.export(model, (x,), fifo)
        assert fifo.is_fifo()
        got = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert onnx.load_from_string(got).graph.node
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.onnx"]


def test_a_re_export_with_external_data_into_the_working_folder(tmp_path, monkeypatch):
    # onnx.save_model refuses a location that exists relative to the working folder, so the
    # second export to a relative "m.onnx" raised FileExistsError for its own m.onnx.data
    monkeypatch.chdir(tmp_path)
    for seed in (0, 1):
        ember.manual_seed(seed)
        model, x = ember.nn.Linear(32, 32).eval(), ember.randn(2, 32)
        ember.onnx.export(model, (x,), "m.onnx", external_data=True)
        np.testing.assert_allclose(_run("m.onnx", x), model(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]


def test_a_new_data_file_gets_the_model_file_s_mode(tmp_path):
    # onnx creates the data file 0600 (a model 0644 whose weights only its owner could read)
    ember.onnx.export(_model(), (ember.randn(2, 32),), tmp_path / "m.onnx", external_data=True)
    mode = (tmp_path / "m.onnx").stat().st_mode & 0o777
    assert (tmp_path / "m.onnx.data").stat().st_mode & 0o777 == mode


def _read_only(monkeypatch, path):
    """``path`` made 0444 and seen as not writable (root, which runs the tests, ignores modes)."""
    os.chmod(path, 0o444)
    access, real = os.access, os.path.realpath(path)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: (
        not (os.fspath(p) == real and mode & os.W_OK) and access(p, mode, **kw)))


def test_a_read_only_or_another_user_s_model_is_written_through_not_replaced(tmp_path,
                                                                            monkeypatch):
    # (os.replace needs only the folder writable: a 0444 model was silently replaced, where
    # torch's open(f, "wb") raises PermissionError; another user's file changed owner)
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    assert not external._through(str(path))
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(path).st_uid + 1)
    assert external._through(str(path))
    monkeypatch.undo()
    _read_only(monkeypatch, path)
    assert external._through(str(path))
    inode = path.stat().st_ino
    for outside in (False, True):
        ember.onnx.export(_model(), (ember.randn(2, 32),), path, external_data=outside)
        assert path.stat().st_ino == inode and path.stat().st_mode & 0o777 == 0o444


def test_a_read_only_model_raises_permission_error_and_keeps_both_files(tmp_path, monkeypatch):
    path, data = tmp_path / "m.onnx", tmp_path / "m.onnx.data"
    path.write_bytes(b"old")
    data.write_bytes(b"old data")
    _read_only(monkeypatch, path)

    def refused(file, mode="r", *args, **kwargs):  # (what open does for a non-root user)
        if os.fspath(file) == str(path) and mode != "rb":
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return open(file, mode, *args, **kwargs)

    monkeypatch.setattr(external, "open", refused, raising=False)
    for outside in (False, True):
        with pytest.raises(PermissionError, match="Permission denied"):
            ember.onnx.export(_model(), (ember.randn(2, 32),), path, external_data=outside)
        assert path.read_bytes() == b"old" and data.read_bytes() == b"old data"
