"""Distributed training over MPI (mpi4py): process groups, collectives on tensors and objects,
differentiable collectives, data parallelism, ZeRO, FSDP, sharded checkpoints and
``ember launch``.

mpi4py is imported only by :func:`init_process_group`, so importing this package is cheap and
works without it; ``ember.distributed.fsdp`` is imported on first use. PyTorch's
``torch.distributed`` names and semantics throughout.

Example (``ember launch -n 2 train.py``):
    >>> import ember.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = ember.ones(3)
    >>> dist.all_reduce(t)                         # tensor([2., 2., 2.]) on both ranks
"""

from ember.data import distributed_sampler as _distributed_sampler
from ember.data.distributed_sampler import DistributedSampler
from ember.distributed import (
    algorithms,
    batching,
    checkpoint,
    device_mesh,
    functional,
    optim,
    sync_batch_norm,
)
from ember.distributed.backends import (
    Backend,
    get_backend_config,
    get_default_backend_for_device,
    get_node_local_rank,
    is_backend_available,
    is_gloo_available,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
)
from ember.distributed.buffers import ReduceOp, Work, reduce_op, supports_complex
from ember.distributed.coalesced import (
    all_gather_coalesced,
    all_gather_single,
    all_reduce_coalesced,
    reduce_scatter_single,
)
from ember.distributed.collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ember.distributed.ddp import DistributedDataParallel
from ember.distributed.debug import (
    DebugLevel,
    get_debug_level,
    set_debug_level,
    set_debug_level_from_env,
)
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
from ember.distributed.grad_bucket import GradBucket
from ember.distributed.monitored_barrier import monitored_barrier
from ember.distributed.object_collectives import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from ember.distributed.p2p import P2POp, batch_isend_irecv
from ember.distributed.prefix_store import PrefixStore
from ember.distributed.process_group import (
    DistBackendError,
    DistError,
    DistNetworkError,
    DistributedError,
    DistStoreError,
    GroupMember,
    ProcessGroup,
    barrier,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_pg_count,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    new_group,
)
from ember.distributed.store import FileStore, HashStore, Store
from ember.distributed.subgroups import (
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    new_subgroups,
    new_subgroups_by_enumeration,
    split_group,
)
from ember.distributed.tcp_store import TCPStore

# DistributedSampler lives in ember.data (layer 3); its default rank and size come from here.
_distributed_sampler.register_world(lambda: (get_world_size(), get_rank()))


def __getattr__(name: str) -> object:
    """``ember.distributed.fsdp`` is imported on first use (``import ember`` does not pay for
    it)."""
    if name == "fsdp":
        import importlib

        return importlib.import_module("ember.distributed.fsdp")
    raise AttributeError(f"module 'ember.distributed' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and ``fsdp`` (imported on first use), for tab completion."""
    return sorted({*globals(), "fsdp"})
