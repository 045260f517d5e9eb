"""PowerSGD (Vogels et al., NeurIPS 2019), PyTorch's DDP hooks: gradients are averaged as
rank-r approximations ``P Qᵀ``, so each step all-reduces ``(n + m) r`` numbers per ``n × m``
gradient instead of ``n m``.

One step of :func:`powerSGD_hook` on a bucket, after ``start_powerSGD_iter`` plain averages:

1. add the error of the last step's approximation (error feedback);
2. gradients too small to gain (``(n + m) r · min_compression_rate ≥ n m``) are all-reduced
   as they are; each other gradient ``M`` is viewed as ``n × m`` (dim 0 by the rest);
3. ``Q`` (random and orthogonalized at first; last step's with warm start) gives
   ``P = M Q``, all-reduced and orthogonalized; then ``Q = Mᵀ P``, all-reduced and divided by
   the world size; ``M ≈ P Qᵀ`` is the averaged gradient;
4. the error ``M_before − P Qᵀ`` is kept for the next step.

:func:`batched_powerSGD_hook` approximates the whole bucket as one square matrix instead.

Example:
    >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=2,
    ...                       start_powerSGD_iter=10)
    >>> ddp_model.register_comm_hook(state, powerSGD_hook)
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterator

import numpy as np

import ember
from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_fut
from ember.distributed.collectives import all_reduce
from ember.distributed.grad_bucket import GradBucket
from ember.distributed.process_group import GroupMember, ProcessGroup, resolve
from ember.errors import ArgumentError
from ember.futures import Future
from ember.tensor import Tensor

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrices: Tensor, epsilon: float = 0) -> None:
    """Orthonormalizes the columns of each matrix of the batch ``matrices`` (b × n × r, r ≤ n),
    in place: Gram-Schmidt for r ≤ 2 or half precision, QR otherwise (as PyTorch)."""
    rank = matrices.shape[2]
    if rank <= 2 or matrices.dtype in (ember.float16, ember.bfloat16):
        for i in range(rank):
            col = matrices[:, :, i : i + 1]
            col.div_(ember.linalg.vector_norm(col, dim=1, keepdim=True) + epsilon)
            if i + 1 < rank:
                rest = matrices[:, :, i + 1 :]
                rest.sub_(ember.sum(col * rest, dim=1, keepdim=True) * col)
    else:
        matrices.copy_(ember.linalg.qr(matrices).Q)


def _should_compress(n: int, m: int, rank: int, min_compression_rate: float) -> tuple:
    """(compress?, elements before, elements after) for an ``n × m`` gradient."""
    before, after = n * m, (n + m) * rank
    return after * min_compression_rate < before, before, after


class PowerSGDState:
    """The hooks' configuration and what they carry from step to step (PyTorch's).

    Args:
        process_group: the group to average over (None: the world).
        matrix_approximation_rank: the rank r of the approximations.
        start_powerSGD_iter: plain averaging for this many steps first (> 1 with error
            feedback or warm start).
        min_compression_rate: compress a gradient only if it shrinks by more than this.
        use_error_feedback: add each step's approximation error to the next step's gradient.
        warm_start: start from last step's Q instead of a random one.
        orthogonalization_epsilon: added to the norms in Gram-Schmidt (0: none).
        random_seed: seeds the initial Q (the same on every rank).
        compression_stats_logging_frequency: log the compression rate every this many steps.
        batch_tensors_with_same_shape: compress gradients of one shape in one batched matmul.

    Example:
        >>> state = PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2)
        >>> state.compression_stats()           # (rate, elements before, after)
        (0, 0, 0)
    """

    __slots__ = ("process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "orthogonalization_epsilon", "use_error_feedback",
                 "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report")

    def __init__(
        self,
        process_group: ProcessGroup | None,
        matrix_approximation_rank: int = 1,
        start_powerSGD_iter: int = 1_000,
        min_compression_rate: float = 2,
        use_error_feedback: bool = True,
        warm_start: bool = True,
        orthogonalization_epsilon: float = 0,
        random_seed: int = 0,
        compression_stats_logging_frequency: int = 10_000,
        batch_tensors_with_same_shape: bool = False,
    ) -> None:
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ArgumentError(
                "PowerSGDState: expected start_powerSGD_iter > 1 if use_error_feedback or "
                "warm_start is enabled, because PowerSGD can only be applied after the first "
                f"two iterations in DDP; got start_powerSGD_iter={start_powerSGD_iter}")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict: dict[int, Tensor] = {}
        self.p_memory_dict: dict[int, Tensor] = {}
        self.q_memory_dict: dict[int, Tensor] = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self) -> dict:
        """Everything but the process group (which does not pickle)."""
        return {slot: getattr(self, slot) for slot in self.__slots__ if slot != "process_group"}

    def __setstate__(self, state: dict) -> None:
        """Restores the state with the default group as its process group."""
        self.process_group = GroupMember.WORLD
        for slot, value in state.items():
            setattr(self, slot, value)

    def maybe_increase_iter(self, bucket: GradBucket) -> None:
        """Counts a step when the last bucket of the step is seen."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self) -> tuple:
        """(compression rate, elements before compression, elements after) so far."""
        before, after = self.total_numel_before_compression, self.total_numel_after_compression
        return (before / after if after > 0 else 0), before, after

    def _report(self, bucket: GradBucket) -> None:
        if bucket.is_last() and self.iter >= self.next_stats_report:
            rate, before, after = self.compression_stats()
            logger.info("Compression stats: iter %s, total before compression %s, total after "
                        "compression %s, rate %s", self.iter, before, after, rate)
            self.next_stats_report = self.iter + self.compression_stats_logging_frequency

    def _random(self, shapes: list[tuple], dtype: ember.dtype) -> list[Tensor]:
        """Normal draws for new Qs, one seed from :attr:`rng` (the same on every rank) per
        call, leaving the default generator untouched."""
        with ember.random.fork_rng():
            ember.manual_seed(int(self.rng.randint(1_000_000_000)))
            return [ember.randn(*shape, dtype=dtype) for shape in shapes]

    def _start_error_feedback(self, index: int, tensor: Tensor) -> Tensor | None:
        """Adds the last error to ``tensor`` (or starts a zero one); a copy of the result."""
        if not self.use_error_feedback:
            return None
        if index in self.error_dict:
            tensor.add_(self.error_dict[index])
        else:
            self.error_dict[index] = ember.zeros(tensor.shape[0], dtype=tensor.dtype)
        return tensor.detach().clone()

    def _end_step(self, bucket: GradBucket, before: Tensor | None, after: Tensor) -> None:
        if before is not None:
            self.error_dict[bucket.index()] = before - after
        if not self.warm_start:
            self.p_memory_dict.clear()
            self.q_memory_dict.clear()
        self.maybe_increase_iter(bucket)


def _then_all_reduce(tensor: Tensor, group: ProcessGroup) -> Tensor:
    """Sums ``tensor`` over ``group`` in place (a blocking step inside a callback chain)."""
    return all_reduce(tensor, group=group, async_op=True).get_future().wait()[0]


def _start(state: PowerSGDState, bucket: GradBucket, op: str
           ) -> tuple[ProcessGroup, Tensor, Future[Tensor] | None]:
    """The hook's group and bucket buffer, and the plain all-reduce's future while the
    iterations before ``start_powerSGD_iter`` run (None once compression starts)."""
    group = resolve(state.process_group, op)
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return group, input_tensor, allreduce_fut(group, input_tensor)
    return group, input_tensor, None


def powerSGD_hook(state: PowerSGDState, bucket: GradBucket) -> Future[Tensor]:
    """Averages the bucket's gradients as rank-``state.matrix_approximation_rank``
    approximations, one per gradient (see the module's description); three all-reduces per
    bucket (uncompressed gradients, Ps, Qs).

    Example:
        >>> state = PowerSGDState(process_group=None, start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, powerSGD_hook)
    """
    group, input_tensor, warming_up = _start(state, bucket, "powerSGD_hook")
    if warming_up is not None:
        return warming_up
    world_size = group.size()
    dtype, index = input_tensor.dtype, bucket.index()
    before = state._start_error_feedback(index, input_tensor)

    matrices, uncompressed = [], []
    p_size = q_size = 0
    for tensor in bucket.gradients():
        matrix = tensor.view(tensor.shape[0] if tensor.ndim else 1, -1)
        n, m = matrix.shape
        rank = min(n, m, state.matrix_approximation_rank)
        compress, numel_before, numel_after = _should_compress(n, m, rank,
                                                                state.min_compression_rate)
        state.total_numel_before_compression += numel_before
        if compress:
            matrices.append(matrix)
            p_size, q_size = p_size + n * rank, q_size + m * rank
            state.total_numel_after_compression += numel_after
        else:
            uncompressed.append(tensor)
            state.total_numel_after_compression += numel_before
    state._report(bucket)
    uncompressed_memory = (ember.cat([t.reshape(-1) for t in uncompressed]) if uncompressed
                           else ember.zeros(0, dtype=dtype))

    fresh = not state.warm_start or index not in state.p_memory_dict
    if fresh:
        state.p_memory_dict[index] = ember.empty(p_size, dtype=dtype)
        state.q_memory_dict[index] = ember.empty(q_size, dtype=dtype)

    # (this step's memories: without warm start another bucket's step may drop them from
    # the state before this bucket's callbacks run)
    p_memory, q_memory = state.p_memory_dict[index], state.q_memory_dict[index]
    by_shape: dict[tuple, list[Tensor]] = defaultdict(list)
    for matrix in matrices:
        by_shape[tuple(matrix.shape)].append(matrix)

    def batches() -> Iterator[Tensor]:
        for same in by_shape.values():
            if state.batch_tensors_with_same_shape and len(same) > 1:
                yield ember.stack(same)  # (a copy: written back in decompress)
            else:
                yield from (matrix.unsqueeze(0) for matrix in same)

    batched, ps, qs = [], [], []
    p_at = q_at = 0
    for tensor in batches():
        b, n, m = tensor.shape
        rank = min(n, m, state.matrix_approximation_rank)
        batched.append(tensor)
        ps.append(p_memory[p_at : p_at + b * n * rank].view(b, n, rank))
        qs.append(q_memory[q_at : q_at + b * m * rank].view(b, m, rank))
        p_at, q_at = p_at + b * n * rank, q_at + b * m * rank

    if fresh:
        for q, draws in zip(qs, state._random([tuple(q.shape) for q in qs], dtype)):
            q.copy_(draws)
    for q in qs:
        _orthogonalize(q, state.orthogonalization_epsilon)
    for tensor, q, p in zip(batched, qs, ps):
        p.copy_(ember.bmm(tensor, q))

    def unpack_uncompressed_and_all_reduce_ps(fut: Future) -> Tensor:
        memory = fut.value()[0].div_(world_size)
        at = 0
        for tensor in uncompressed:
            tensor.copy_(memory[at : at + tensor.numel()].view(tuple(tensor.shape)))
            at += tensor.numel()
        return _then_all_reduce(p_memory, group)

    def compute_qs(fut: Future) -> Tensor:
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for tensor, p, q in zip(batched, ps, qs):
            q.copy_(ember.bmm(tensor.transpose(1, 2), p))
        return _then_all_reduce(q_memory, group)

    def decompress(fut: Future) -> Tensor:
        fut.value().div_(world_size)
        for p, q, tensor in zip(ps, qs, batched):
            tensor.copy_(ember.bmm(p, q.transpose(1, 2)))
        for tensor in batched:
            if tensor.shape[0] > 1:  # a stacked batch: back into the bucket's gradients
                for i, original in enumerate(by_shape[tuple(tensor.shape[1:])]):
                    original.copy_(tensor[i])
        state._end_step(bucket, before, input_tensor)
        return input_tensor

    first = all_reduce(uncompressed_memory, group=group, async_op=True).get_future()
    return first.then(unpack_uncompressed_and_all_reduce_ps).then(compute_qs).then(decompress)


def batched_powerSGD_hook(state: PowerSGDState, bucket: GradBucket) -> Future[Tensor]:
    """PowerSGD on the whole bucket at once: the flat gradients, zero-padded to a square
    ``s × s`` (s = ⌈√numel⌉), approximated with rank ``state.matrix_approximation_rank``; two
    all-reduces per bucket, a coarser approximation than :func:`powerSGD_hook`.

    Example:
        >>> state = PowerSGDState(process_group=None, start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, batched_powerSGD_hook)
    """
    group, input_tensor, warming_up = _start(state, bucket, "batched_powerSGD_hook")
    if warming_up is not None:
        return warming_up
    world_size = group.size()
    total = input_tensor.shape[0]
    side = math.ceil(math.sqrt(total))
    rank = state.matrix_approximation_rank
    state.total_numel_before_compression += total
    state.total_numel_after_compression += side * rank * 2
    state._report(bucket)
    index = bucket.index()
    padded = ember.zeros(side * side, dtype=input_tensor.dtype)
    padded[:total].copy_(input_tensor)
    before = state._start_error_feedback(index, padded)
    matrix = padded.view(side, side)

    if not state.warm_start or index not in state.p_memory_dict:
        state.p_memory_dict[index] = ember.empty(side, rank, dtype=input_tensor.dtype)
        state.q_memory_dict[index] = state._random([(side, rank)], input_tensor.dtype)[0]
    p, q = state.p_memory_dict[index], state.q_memory_dict[index]
    _orthogonalize(q.unsqueeze(0))
    p.copy_(ember.matmul(matrix, q))

    def compute_q(fut: Future) -> Tensor:
        _orthogonalize(p.unsqueeze(0))
        q.copy_(ember.matmul(matrix.t(), p))
        return _then_all_reduce(q, group)

    def decompress(fut: Future) -> Tensor:
        fut.value().div_(world_size)
        matrix.copy_(ember.matmul(p, q.t()))
        state._end_step(bucket, before, padded)
        input_tensor.copy_(padded[:total])
        return input_tensor

    return all_reduce(p, group=group, async_op=True).get_future().then(compute_q).then(
        decompress)
