"""Backend names and availability, launch-environment queries and the error classes, against
torch.distributed's; the single-process docstring examples of backends and stores."""

import doctest

import pytest
import torch.distributed as tdist

import ember.distributed as dist
from ember.distributed import backends, prefix_store, store, tcp_store


def test_backend_names_as_torch():
    for name in ["MPI", "mpi", "Nccl", "gloo", "UCC", "my_backend"]:
        assert dist.Backend(name) == tdist.Backend(name)
    assert dist.Backend.MPI == "mpi" and isinstance(dist.Backend("MPI"), str)
    with pytest.raises(ValueError, match="must be a string"):
        dist.Backend(3)


def test_availability_and_environment(monkeypatch):
    assert dist.is_mpi_available() == dist.is_backend_available("MPI") == dist.is_available()
    assert not (dist.is_nccl_available() or dist.is_gloo_available() or dist.is_ucc_available()
                or dist.is_backend_available("nccl"))
    for var in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                "EMBER_RESTART_COUNT", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    assert not dist.is_torchelastic_launched()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="pass fallback_rank"):
        dist.get_node_local_rank()
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2")
    assert dist.get_node_local_rank() == 2
    monkeypatch.setenv("LOCAL_RANK", "1")  # torchrun's variable first, as PyTorch reads it
    assert dist.get_node_local_rank(fallback_rank=5) == 1
    monkeypatch.setenv("EMBER_RESTART_COUNT", "0")
    assert dist.is_torchelastic_launched()


def test_error_classes_as_torch():
    for name in ["DistBackendError", "DistNetworkError", "DistStoreError"]:
        assert issubclass(getattr(dist, name), dist.DistError)
        assert issubclass(getattr(tdist, name), tdist.DistError)
    assert issubclass(dist.DistError, RuntimeError) and dist.DistributedError is dist.DistError


def test_debug_level_as_torch(monkeypatch):
    assert {m.name: m.value for m in dist.DebugLevel} == {
        name: int(m) for name, m in tdist.DebugLevel.__members__.items()}
    assert dist.get_debug_level() is dist.DebugLevel.OFF
    try:
        dist.set_debug_level(dist.DebugLevel.INFO)
        assert dist.get_debug_level() is dist.DebugLevel.INFO
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() is dist.DebugLevel.DETAIL
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "loud")
        with pytest.raises(ValueError, match="must be OFF, INFO, or DETAIL, got 'loud'"):
            dist.set_debug_level_from_env()
        with pytest.raises(TypeError, match="expected a DebugLevel"):
            dist.set_debug_level("DETAIL")
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


def test_debug_level_is_read_from_the_environment_at_import_as_torch():
    import subprocess
    import sys

    from tests.distributed.harness import ROOT

    code = "import ember.distributed as d; print(d.get_debug_level().name)"
    env = {"PYTHONPATH": str(ROOT / "src"), "TORCH_DISTRIBUTED_DEBUG": "detail"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "DETAIL", out.stderr


def test_without_a_process_group():
    assert dist.get_pg_count() == 0
    with pytest.raises(dist.DistError, match="init_process_group"):
        dist.get_process_group_ranks(None)


def test_docstring_examples_run():
    glob = {"dist": dist}
    failed = doctest.testmod(backends, extraglobs=glob).failed
    for obj in (store.Store.add, store.Store.compare_set, store.HashStore,
                prefix_store.PrefixStore, tcp_store.TCPStore, prefix_store):
        runner = doctest.DocTestRunner()
        for test in doctest.DocTestFinder(recurse=False).find(obj, globs=glob):
            failed += runner.run(test).failed
    assert failed == 0


def test_names_for_torch_scripts():
    for op in ("SUM", "PRODUCT", "MAX", "MIN", "AVG"):
        assert dist.supports_complex(getattr(dist.ReduceOp, op)) == tdist.supports_complex(
            getattr(tdist.ReduceOp, op))
    with pytest.warns(FutureWarning, match="reduce_op` is deprecated"):
        assert dist.reduce_op.MAX is dist.ReduceOp.MAX
    assert dist.default_pg_timeout == tdist.default_pg_timeout
    assert not dist.is_xccl_available()
    with pytest.raises(ValueError, match="no backend is registered for device 'cuda'"):
        dist.get_default_backend_for_device("cuda:0")
    with pytest.raises(dist.DistError, match="not initialized"):
        dist.get_backend_config()
    assert dist.group.WORLD is None  # (no init_process_group in this process)
