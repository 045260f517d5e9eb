"""ember.hub's downloads without a network: file:// URLs of local files, the cache directory
and its environment variables, SHA-256 prefix checks, and checkpoints loaded with Ember's safe
loader (never pickle)."""

import hashlib
import http.server
import io
import os
import struct
import threading
import urllib.request
import zipfile

import numpy as np
import pytest
import torch

import ember
from ember.errors import CheckpointError
from ember.hub import cache


@pytest.fixture(autouse=True)
def no_chosen_dir(monkeypatch):
    monkeypatch.setattr(cache, "_chosen_dir", None)


def test_the_cache_directory(monkeypatch, tmp_path):
    for name in ("EMBER_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == str(tmp_path / "home" / ".cache" / "ember" / "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ember.hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.setenv("EMBER_HOME", "~/ember_home")
    assert ember.hub.get_dir() == str(tmp_path / "home" / "ember_home" / "hub")
    ember.hub.set_dir("~/chosen")
    assert ember.hub.get_dir() == str(tmp_path / "home" / "chosen")


def _served(tmp_path, payload=b"weights" * 50_000, name="blob.bin"):
    source = tmp_path / "server" / name
    source.parent.mkdir(exist_ok=True)
    source.write_bytes(payload)
    return source, hashlib.sha256(payload).hexdigest()


def test_download_with_progress_and_hash(tmp_path, capsys):
    source, digest = _served(tmp_path)
    dst = tmp_path / "out" / "copy.bin"
    dst.parent.mkdir()
    ember.hub.download_url_to_file(source.as_uri(), str(dst), hash_prefix=digest[:10])
    assert dst.read_bytes() == source.read_bytes()
    assert "0.3 MiB / 0.3 MiB (100%)" in capsys.readouterr().err
    ember.hub.download_url_to_file(source.as_uri(), dst, progress=False)
    assert capsys.readouterr().err == ""


def test_a_hash_mismatch_leaves_nothing_behind(tmp_path):
    source, digest = _served(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    wrong = "0" * 8 if not digest.startswith("0" * 8) else "1" * 8
    with pytest.raises(RuntimeError, match=f'invalid hash value .*expected a SHA-256 starting '
                                           f'with "{wrong}", got "{digest}"'):
        ember.hub.download_url_to_file(source.as_uri(), str(out / "copy.bin"), wrong,
                                       progress=False)
    assert os.listdir(out) == []
    with pytest.raises(OSError):
        ember.hub.download_url_to_file((tmp_path / "missing").as_uri(), str(out / "x"))
    assert os.listdir(out) == []


class _CutResponse(io.BytesIO):
    """What urllib returns for an HTTP body cut short: fewer bytes than Content-Length, then
    b"" without an error (http.client does not raise IncompleteRead from read(amt)), or an
    error partway when ``fail`` is given."""

    def __init__(self, body, length, fail=None):
        super().__init__(body)
        self.headers, self.fail = {"Content-Length": str(length)}, fail

    def read(self, size=-1):
        chunk = super().read(size)
        if self.fail is not None and self.tell() >= len(self.getvalue()):
            raise self.fail
        return chunk


def test_a_download_cut_short_leaves_nothing_behind(tmp_path, monkeypatch):
    payload = b"weights" * 50_000
    cut = payload[:200_000]
    out = tmp_path / "out"
    out.mkdir()
    good = out / "kept.bin"
    good.write_bytes(b"an earlier complete download")
    for fail in (None, ConnectionResetError("reset by peer"), KeyboardInterrupt()):
        monkeypatch.setattr(urllib.request, "urlopen",
                            lambda request, fail=fail: _CutResponse(cut, len(payload), fail))
        error = type(fail) if fail is not None else RuntimeError
        with pytest.raises(error, match="" if fail is not None else
                           f"ended after 200000 of the {len(payload)} bytes"):
            ember.hub.download_url_to_file("https://example.invalid/w.bin", good,
                                           progress=False)
        assert os.listdir(out) == ["kept.bin"]
        assert good.read_bytes() == b"an earlier complete download"
    # load_state_dict_from_url caches nothing, so a later call downloads again
    monkeypatch.setattr(urllib.request, "urlopen",
                        lambda request: _CutResponse(cut, len(payload)))
    with pytest.raises(RuntimeError, match="ended after"):
        ember.hub.load_state_dict_from_url("https://example.invalid/w.safetensors",
                                           model_dir=str(tmp_path / "c"), progress=False)
    assert os.listdir(tmp_path / "c") == []


def test_load_state_dict_from_url_caches_and_checks(tmp_path):
    state = {"weight": ember.arange(6.0).reshape(2, 3), "step": 3}
    staged = tmp_path / "staged.safetensors"
    ember.save(state, staged)
    digest = hashlib.sha256(staged.read_bytes()).hexdigest()
    source = tmp_path / "server" / f"tiny-{digest[:8]}.safetensors"
    source.parent.mkdir()
    staged.rename(source)
    ember.hub.set_dir(tmp_path / "hub")

    loaded = ember.hub.load_state_dict_from_url(source.as_uri(), check_hash=True,
                                                progress=False, map_location="cpu")
    assert loaded["step"] == 3 and ember.equal(loaded["weight"], state["weight"])
    cached = tmp_path / "hub" / "checkpoints" / source.name
    assert cached.is_file()
    source.unlink()  # read from the cache from now on
    again = ember.hub.load_state_dict_from_url(source.as_uri(), progress=False)
    assert ember.equal(again["weight"], state["weight"])

    renamed = tmp_path / "server" / "other.safetensors"
    ember.io.save_file({"w": ember.ones(2)}, renamed)  # a plain safetensors file
    with pytest.raises(RuntimeError, match="invalid hash value"):
        ember.hub.load_state_dict_from_url(renamed.as_uri(), model_dir=str(tmp_path / "m"),
                                           check_hash=True, file_name="w-abcdef.safetensors",
                                           progress=False)
    flat = ember.hub.load_state_dict_from_url(renamed.as_uri(), model_dir=str(tmp_path / "m"),
                                              check_hash=True, progress=False)
    assert list(flat) == ["w"] and flat["w"].tolist() == [1.0, 1.0]


def test_pytorch_checkpoints_load_as_data(tmp_path):
    source = tmp_path / "model.pt"
    torch.save({"w": torch.from_numpy(np.ones(2))}, source)
    state = ember.hub.load_state_dict_from_url(source.as_uri(), model_dir=str(tmp_path / "c"),
                                               progress=False)
    assert state["w"].tolist() == [1.0, 1.0]
    torch.save({"model": torch.nn.Linear(2, 2)}, source)  # a whole module: never unpickled
    with pytest.raises(CheckpointError, match="state_dict"):
        ember.hub.load_state_dict_from_url(source.as_uri(), model_dir=str(tmp_path / "d"),
                                           progress=False)


def test_a_zip_of_one_checkpoint_loads_as_torch_hub_does(tmp_path):
    # PyTorch's legacy layout: a .zip holding the one checkpoint file, extracted beside it
    torch.save({"w": torch.arange(3.0), "n": 2}, tmp_path / "inner.pt")
    archive = tmp_path / "server" / "weights.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(tmp_path / "inner.pt", "inner.pt")
    want = torch.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "t"),
                                              progress=False)
    got = ember.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "e"),
                                             progress=False)
    assert got["n"] == want["n"] and got["w"].tolist() == want["w"].tolist()
    assert sorted(os.listdir(tmp_path / "e")) == sorted(os.listdir(tmp_path / "t"))
    again = ember.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "e"),
                                               progress=False)  # from the cache
    assert again["w"].tolist() == [0.0, 1.0, 2.0]


def test_a_downloaded_file_has_the_usual_permissions(tmp_path):
    # (a temporary file made by tempfile is private, 0o600; the download, like PyTorch's,
    # gets what the umask gives any new file, so that a shared cache stays readable)
    source, _ = _served(tmp_path, payload=b"x")
    umask = os.umask(0o022)
    try:
        ember.hub.download_url_to_file(source.as_uri(), tmp_path / "out.bin", progress=False)
    finally:
        os.umask(umask)
    assert (tmp_path / "out.bin").stat().st_mode & 0o777 == 0o644


@pytest.fixture
def local_server():
    """A local HTTP/1.1 server (no network) whose GET answers with the body and headers the
    test sets in ``reply``; the body is sent chunked when the headers say so."""
    reply = {"body": b"", "headers": {}}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            for key, value in {**reply["headers"], "Connection": "close"}.items():
                self.send_header(key, value)
            self.end_headers()
            body = reply["body"]
            if reply["headers"].get("Transfer-Encoding") == "chunked":
                body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/w.bin", reply
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("headers", [
    {"Content-Length": "abc"},  # (raised int()'s ValueError, and left w.bin.<id>.partial)
    {"Content-Length": "-5"},
    # a stale length beside a chunked body (RFC 7230 3.3.3: ignored), was "cut off"
    {"Transfer-Encoding": "chunked", "Content-Length": "400"},
])
def test_a_length_http_client_ignores_is_ignored(tmp_path, local_server, headers):
    url, reply = local_server
    reply.update(body=b"y" * 1000, headers=headers)
    out = tmp_path / "out"
    out.mkdir()
    ember.hub.download_url_to_file(url, out / "w.bin", progress=False)
    assert os.listdir(out) == ["w.bin"] and (out / "w.bin").read_bytes() == b"y" * 1000


def test_a_zip_holding_a_file_of_its_own_name_loads_and_keeps_the_cache(tmp_path):
    # w.pth holding w.pth: extracting straight over the archive being read emptied the cache
    torch.save({"w": torch.arange(100_000.0)}, tmp_path / "w.pth")  # (past read buffers)
    archive = tmp_path / "server" / "w.pth"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(tmp_path / "w.pth", "w.pth")
    for _ in range(2):  # downloaded, then from the cache
        got = ember.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "c"),
                                                 progress=False)
        assert got["w"].tolist() == list(range(100_000))
        assert os.listdir(tmp_path / "c") == ["w.pth"]


def test_a_damaged_zip_checkpoint_raises_a_checkpoint_error(tmp_path):
    source = tmp_path / "server" / "w.pth"
    source.parent.mkdir()
    torch.save({"w": torch.arange(3.0)}, source)
    data = bytearray(source.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    directory = struct.unpack("<I", data[end + 16:end + 20])[0]
    data[directory + 28:directory + 30] = struct.pack("<H", 65000)  # a name length too long
    source.write_bytes(data)
    assert zipfile.is_zipfile(source)
    with pytest.raises(CheckpointError, match="not a readable zip archive"):  # (was raw
        ember.hub.load_state_dict_from_url(source.as_uri(), model_dir=str(tmp_path / "c"),
                                           progress=False)  # UnicodeDecodeError)


def test_a_damaged_member_of_a_one_file_zip_raises_a_checkpoint_error(tmp_path):
    torch.save({"w": torch.arange(3.0)}, tmp_path / "inner.pt")
    archive = tmp_path / "server" / "w.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(tmp_path / "inner.pt", "inner.pt")
    data = bytearray(archive.read_bytes())
    data[100] ^= 0xFF  # a byte of the stored member
    archive.write_bytes(data)
    with pytest.raises(CheckpointError, match=r"w.zip: cannot extract inner.pt \(BadZipFile: "
                                              "Bad CRC-32"):  # (was zipfile's bare BadZipFile)
        ember.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "c"),
                                           progress=False)
    assert os.listdir(tmp_path / "c") == ["w.zip"]  # (nothing half-extracted beside it)


def test_import_ember_leaves_urllib_request_to_the_first_download():
    import subprocess
    import sys

    code = ("import sys, ember; print(sorted(m for m in ('urllib.request', 'http.client') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.split() == ["[]"]
