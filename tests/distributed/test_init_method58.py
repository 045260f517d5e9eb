"""init_process_group takes PyTorch's ``init_method`` URLs (env://, tcp://host:port,
file:///path; it was a TypeError): the ranks meet in the store the URL names, and a URL that
misses its port or path, has an unknown scheme or disagrees with MPI's ranks is a clear error
(sweep58g)."""

import pytest

from ember.distributed.rendezvous import rendezvous_store
from tests.distributed.harness import needs_mpi, reports, run_ranks

CODE = """
import socket, sys
import ember
import ember.distributed as dist
from tests.distributed.harness import report

url = sys.argv[1]
if url == "tcp":  # rank 0 picks a free port just before it listens (a port picked before
    from mpi4py import MPI  # mpiexec started could be taken by then: the test was flaky)

    port = None
    if MPI.COMM_WORLD.rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = MPI.COMM_WORLD.bcast(port)
    url = f"tcp://127.0.0.1:{port}"
dist.init_process_group("mpi", url, world_size=2)
x = ember.ones(2) * (dist.get_rank() + 1)
dist.all_reduce(x)
report([dist.get_world_size(), x.tolist()])
dist.destroy_process_group()
"""


@needs_mpi
@pytest.mark.parametrize("url", ["env://", "tcp", "file"])
def test_init_method_meets(url, tmp_path):
    args = (f"file://{tmp_path / 'rdzv'}?world_size=2" if url == "file" else url,)
    got = reports(run_ranks(CODE, 2, timeout=90, args=args))
    assert got == {0: [[2, [3.0, 3.0]]], 1: [[2, [3.0, 3.0]]]}


@pytest.mark.parametrize("url, error, words", [
    ("tcp://127.0.0.1", ValueError, "port number missing"),
    ("tcp://127.0.0.1:99999", ValueError, "tcp://"),
    ("tcp://:29500", ValueError, "host name missing"),
    ("file://", ValueError, "path missing"),
    ("tcp://127.0.0.1:1?rank=1", ValueError, "rank=1"),
    ("file:///tmp/x?world_size=abc", ValueError, "not an integer"),
    ("foo://bar", RuntimeError, "no rendezvous handler for foo://"),
    ("127.0.0.1:29500", RuntimeError, "no rendezvous handler"),
    (29500, RuntimeError, "URL string"),
])
def test_init_method_errors(url, error, words):
    with pytest.raises(error, match=words.replace("?", r"\?")):
        rendezvous_store(url, 0, 2, None)


def test_env_checks_rank_variables(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(ValueError, match="env:// rendezvous: rank=1"):
        rendezvous_store("env://", 0, 2, None)
    monkeypatch.setenv("RANK", "0")
    assert rendezvous_store("env://", 0, 2, None) is None


def test_init_method_and_store_refused():
    import ember.distributed as dist

    with pytest.raises(ValueError, match="both init_method and store"):
        dist.init_process_group("mpi", "env://", store=dist.HashStore())
