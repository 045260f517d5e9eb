"""PyTorch's FSDP2, ``fully_shard``: shards a module's parameters in place over a 1-d device
mesh, each rank keeping the ``Shard(0)`` piece of every parameter (see ``param_group.py`` for
the layout and how the gathered parameters reach forward and autograd).

``fully_shard(module)`` turns the module's class into a subclass of (:class:`FSDPModule`, its
class), whose ``forward`` gathers the module's parameters, runs, and frees them again
(``reshard_after_forward``); backward gathers them again where it needs them and
reduce-scatters their gradients, so each piece's ``.grad`` is its share of the gradient
averaged over the ranks. Applied to the blocks first and then to the root, every module
communicates for its own parameters (those not inside a nested ``fully_shard`` module).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from ember import nn
from ember.autograd.graph import saved_tensors_hooks
from ember.distributed.buffers import SAME_MODEL_HINT, check_same_everywhere
from ember.distributed.device_mesh import DeviceMesh
from ember.distributed.fsdp.api import MixedPrecisionPolicy, OffloadPolicy
from ember.distributed.fsdp.fully_sharded import _cast_floating, _np_dtype
from ember.distributed.fsdp.param_group import (
    ShardedParamGroup,
    described,
    sharded_grad_norm,
    sharded_piece,
    whole_of_piece,
)
from ember.distributed.tensor.dtensor import DTensor, world_mesh
from ember.dtypes import to_dtype
from ember.errors import ArgumentError
from ember.nn import init
from ember.nn.parameter import Parameter
from ember.nn.utils.clip_grad import SHARDED_NORMS
from ember.tensor import Tensor
from ember.utils import checkpoint as _checkpoint

__all__ = ["FSDPModule", "UnshardHandle", "fully_shard"]

SHARDED_NORMS.append(sharded_grad_norm)  # clip_grad_norm_ sees the whole gradients' norm
init.SHARDED_PIECES.append(whole_of_piece)  # nn.init fills a piece with its rows of the whole

_IN_FORWARD: list[ShardedParamGroup] = []  # the groups whose module's forward is running
_RUNNING: list[FSDPState] = []  # the fully_shard modules whose forward is running


def _recompute_unsharded(groups: tuple[ShardedParamGroup, ...], run: Any) -> Any:
    """Activation checkpointing's recompute (in backward) of a function called inside
    sharded modules' forward: their gathered parameters are their attributes again, as in
    forward (PyTorch's pre-backward hooks unshard every enclosing module likewise)."""
    try:
        for g in groups:
            g.unshard_for_recompute()
        return run()
    finally:
        for g in groups:
            g.uninstall()


_checkpoint.CONTEXTS["fully_shard"] = (lambda: tuple(_IN_FORWARD), _recompute_unsharded)


class FSDPState:
    """What ``fully_shard`` keeps on a module: the options and its parameter group (None
    when all its parameters are in nested ``fully_shard`` modules)."""

    def __init__(self, group: ShardedParamGroup | None, mesh: DeviceMesh,
                 reshard_after_forward: bool | None, mp_policy: MixedPrecisionPolicy,
                 offload_policy: OffloadPolicy) -> None:
        self.group = group
        self.mesh = mesh
        self.reshard_after_forward = reshard_after_forward  # (None: decided by the 1st forward)
        self.mp_policy = mp_policy
        self.offload_policy = offload_policy
        self.forward_prefetch: list[FSDPState] = []
        self.running = False  # (inside the call: forward, reached through __call__, just runs)

    def forward(self, run: Any, args: tuple, kwargs: dict) -> Any:
        if self.running:
            return run(*args, **kwargs)
        mp = self.mp_policy
        if mp.param_dtype is not None and mp.cast_forward_inputs:
            args, kwargs = _cast_floating((args, kwargs), to_dtype(mp.param_dtype))
        if self.reshard_after_forward is None:  # PyTorch's default: the root (called in no
            self.reshard_after_forward = bool(_RUNNING)  # other's forward) keeps them
        g = self.group
        self.running = True
        _RUNNING.append(self)
        try:
            if g is None:
                self._prefetch_forward()
                out = run(*args, **kwargs)
            else:
                out = self._unsharded(g, run, args, kwargs)
        finally:
            _RUNNING.pop()
            self.running = False
        if mp.output_dtype is not None:
            out = _cast_floating(out, to_dtype(mp.output_dtype))
        return out

    def _unsharded(self, g: ShardedParamGroup, run: Any, args: tuple, kwargs: dict) -> Any:
        g.unshard()
        self._prefetch_forward()
        _IN_FORWARD.append(g)
        try:
            with (saved_tensors_hooks(g.pack, g.unpack) if self.reshard_after_forward
                  else contextlib.nullcontext()):
                return run(*args, **kwargs)
        finally:
            _IN_FORWARD.pop()
            if self.reshard_after_forward is True:
                g.reshard()
            elif self.reshard_after_forward:  # (an int: pieces over fewer ranks)
                g.reshard_to_post()
            # (with False the gathered parameters stay the attributes until backward ends, as
            # PyTorch's stay registered: a parent's forward may use them, a tied head)

    def _prefetch_forward(self) -> None:
        """Starts the all-gathers of ``set_modules_to_forward_prefetch``'s modules (after this
        module's own, if it has parameters), which run while this one computes."""
        for other in self.forward_prefetch:
            if other.group is not None:
                other.group.prefetch()


class PieceGuard:
    """Mixed into the classes of the modules holding a ``fully_shard`` module's parameters
    (:class:`FSDPModule` and its plain submodules): a piece read inside a forward raises. The
    gathered parameters, while there, are instance attributes, found without this
    ``__getattr__``; a piece reaches it when the module is resharded (its forward had ended),
    where PyTorch's sharded DTensor would fail in the computation but Ember's piece would
    compute silently with this rank's rows."""

    def __getattr__(self, name: str) -> Any:  # (parameters and submodules: not in __dict__)
        value = super().__getattr__(name)
        if _RUNNING and isinstance(value, Parameter):
            _refuse_piece(self, name, value)
        return value


def _refuse_piece(module: nn.Module, name: str, value: Parameter) -> None:
    found = sharded_piece(value)
    if found is None:  # (an ignored parameter)
        return
    group = found[0]
    fqn = next((s.fqn for s in group.slots if s.module is module and s.name == name), name)
    raise RuntimeError(
        f"{group.owner}: '{fqn}' was read inside a forward while the module is resharded "
        "(its forward had ended and freed the gathered parameters), so it is this rank's "
        "piece, not the parameter. Hint: fully_shard(..., reshard_after_forward=False) "
        "on this module keeps the gathered parameters until backward, or call its "
        "unshard() first, or shard it in one fully_shard module with the code reading it")


_GUARDED: dict[type, type] = {}


def _guard(module: nn.Module) -> None:
    """Makes a plain submodule holding sharded parameters a :class:`PieceGuard` (its class's
    name unchanged)."""
    cls = type(module)
    if not isinstance(module, PieceGuard):
        if cls not in _GUARDED:
            _GUARDED[cls] = type(cls.__name__, (PieceGuard, cls),
                                 {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                  "__reduce_ex__": _reduce_unguarded})
        module.__class__ = _GUARDED[cls]


def _reduce_unguarded(module: nn.Module, protocol: int) -> tuple:
    """Pickles a guarded module as its own class (pickle finds classes by name; a copy is
    not sharded)."""
    _, _, *rest = object.__reduce_ex__(module, max(protocol, 2))  # (the state, then items)
    return (object.__new__, (type(module).__bases__[1],), *rest)


class FSDPModule(PieceGuard):
    """The class ``fully_shard`` mixes into a module's: ``isinstance(m, FSDPModule)`` tells a
    sharded module, and these methods control it. Not made directly.

    Example (2 ranks):
        >>> for block in model.blocks:
        ...     fully_shard(block)
        >>> fully_shard(model)
        >>> isinstance(model, FSDPModule), type(model).__name__
        (True, 'FSDPGPT')
    """

    _fsdp_state: FSDPState
    # what ember.jit.compile says when a compiled function reaches one (jit/compiled.py)
    jit_refusal = ("its forward all-gathers the parameters and its backward reduce-scatters "
                   "the gradients: collectives a compiled graph would run once, when tracing. "
                   "Hint: compile the submodules' forward inside the sharded modules instead")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # (around the module's forward hooks too: as PyTorch's prepended pre-forward hook,
        # they see the cast inputs and the gathered parameters)
        return self._fsdp_state.forward(super().__call__, args, kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # (called directly, not through hooks)
        return self._fsdp_state.forward(super().forward, args, kwargs)

    def unshard(self, async_op: bool = False) -> UnshardHandle | None:
        """Gathers this module's parameters now (a later forward uses them without gathering
        while the pieces are unchanged) and shows them as the module's attributes until
        :meth:`reshard` or the next forward; gradients flow from them to the pieces.
        With ``async_op=True`` the all-gather runs in the background and the returned
        :class:`UnshardHandle`'s ``wait()`` (or the module's next forward) finishes it.

        Example:
            >>> handle = model.unshard(async_op=True)    # … other work meanwhile …
            >>> handle.wait(); model.weight.shape         # the full shape
        """
        handle = UnshardHandle(self._fsdp_state.group)
        if not async_op:
            handle.wait()
            return None
        if handle.group is not None:
            handle.group.prefetch()
        return handle

    def reshard(self) -> None:
        """Frees this module's gathered parameters; its attributes are the pieces again.

        Example:
            >>> model.reshard()
        """
        if self._fsdp_state.group is not None:
            self._fsdp_state.group.reshard()

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *,
                                   recurse: bool = True) -> None:
        """With False, backward keeps the gradients unreduced and adds them to those of the
        next backward run with True (gradient accumulation without communication).

        Example:
            >>> model.set_requires_gradient_sync(False)
            >>> loss_fn(model(x1)).backward()                 # no reduce-scatter
            >>> model.set_requires_gradient_sync(True)
            >>> loss_fn(model(x2)).backward()                 # .grad: the mean of g1 + g2
        """
        for state in self._states(recurse):
            if state.group is not None:
                state.group.sync = bool(requires_gradient_sync)

    def set_reshard_after_forward(self, reshard_after_forward: bool, *,
                                  recurse: bool = True) -> None:
        """Whether forward frees the gathered parameters (backward then gathers them again).

        Example:
            >>> model.set_reshard_after_forward(False)
        """
        if not isinstance(reshard_after_forward, bool):
            raise ArgumentError("set_reshard_after_forward: reshard_after_forward should be a "
                                f"bool, got {reshard_after_forward!r}")
        for state in self._states(recurse):
            state.reshard_after_forward = reshard_after_forward

    def set_reshard_after_backward(self, reshard_after_backward: bool, *,
                                   recurse: bool = True) -> None:
        """Whether backward frees the gathered parameters (True by default); with False the
        next forward reuses them while the pieces are unchanged (gradient accumulation).

        Example:
            >>> model.set_reshard_after_backward(False)
        """
        for state in self._states(recurse):
            if state.group is not None:
                state.group.reshard_after_backward = bool(reshard_after_backward)

    def set_modules_to_forward_prefetch(self, modules: list[FSDPModule]) -> None:
        """The modules whose all-gathers this module's forward starts (in the background)
        right after gathering its own, so that they arrive while it computes; their forward
        then finishes them instead of gathering.

        Example:
            >>> for this, nxt in zip(model.blocks, model.blocks[1:]):
            ...     this.set_modules_to_forward_prefetch([nxt])
        """
        self._fsdp_state.forward_prefetch = [m._fsdp_state for m in _fsdp_modules(
            "set_modules_to_forward_prefetch", modules)]

    def set_modules_to_backward_prefetch(self, modules: list[FSDPModule]) -> None:
        """The modules whose all-gathers this module's backward starts (in the background)
        when it first gathers or reads its own parameters, before their backward needs them.

        Example:
            >>> for this, prev in zip(model.blocks[1:], model.blocks):
            ...     this.set_modules_to_backward_prefetch([prev])
        """
        modules = _fsdp_modules("set_modules_to_backward_prefetch", modules)
        group = self._fsdp_state.group
        if group is None:
            raise ArgumentError(f"set_modules_to_backward_prefetch: {type(self).__name__} has no "
                                "parameters of its own (all are in nested fully_shard modules), so "
                                "its backward gathers nothing to prefetch after. Hint: call it on "
                                "a module with parameters")
        group.backward_prefetch = [m._fsdp_state.group for m in modules
                                   if m._fsdp_state.group is not None]

    def set_is_last_backward(self, is_last_backward: bool) -> None:
        """Whether the next backward is the last before the optimizer step (True by default;
        recursive). At the end of the last one, all-gathers that backward prefetching started
        and no backward used are finished and freed; with False they are kept for the next
        backward (microbatching). Gradient reductions finish within backward either way.

        Example:
            >>> model.set_is_last_backward(False)     # microbatches but the last
        """
        for state in self._states(True):
            if state.group is not None:
                state.group.last_backward = bool(is_last_backward)

    def _states(self, recurse: bool) -> list[FSDPState]:
        modules = self.modules() if recurse else [self]
        return [m._fsdp_state for m in modules if isinstance(m, FSDPModule)]


class UnshardHandle:
    """What ``FSDPModule.unshard(async_op=True)`` returns: ``wait()`` finishes the all-gather
    and shows the gathered parameters as the module's attributes.

    Example:
        >>> model.unshard(async_op=True).wait()
    """

    def __init__(self, group: ShardedParamGroup | None) -> None:
        self.group = group

    def wait(self) -> None:
        """Waits for the all-gather (once; later calls do nothing)."""
        if self.group is not None:
            self.group.unshard()
            self.group = None


def _fsdp_modules(who: str, modules: Any) -> list[FSDPModule]:
    modules = list(modules)
    for m in modules:
        if not isinstance(m, FSDPModule):
            raise TypeError(f"FSDPModule.{who}: expected fully_shard modules, got "
                            f"{type(m).__name__} (apply fully_shard to it first)")
    return modules


def _local_entries(module: FSDPModule, state_dict: dict, prefix: str, *_: Any) -> None:
    """Load state dict pre-hook (whichever module's ``load_state_dict`` runs): the sharded
    parameters' entries, DTensors (as ``state_dict()`` gives) or full tensors, become this
    rank's pieces."""
    state = module._fsdp_state
    if state.group is None:
        return
    for fqn, index in state.group.fqns():
        key = prefix + fqn
        if key in state_dict:
            state_dict[key] = state.group.local_piece(key, state_dict[key], index)


_CLASSES: dict[type, type] = {}


def _fsdp_class(cls: type) -> type:
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls),
                             {"__module__": cls.__module__})
    return _CLASSES[cls]


def fully_shard(module: nn.Module, *, mesh: DeviceMesh | None = None,
                reshard_after_forward: bool | int | None = None,
                mp_policy: MixedPrecisionPolicy | None = None,
                offload_policy: OffloadPolicy | None = None,
                ignored_params: Iterable[Parameter] | None = None) -> FSDPModule:
    """Shards ``module``'s parameters over ``mesh`` in place and returns the module, now an
    :class:`FSDPModule`. Every rank calls it with the same model (the same initial values:
    each keeps its piece). Apply it to submodules (blocks) first, then to the root; each
    takes the parameters not already in a nested ``fully_shard`` module.

    Args:
        module: the module to shard.
        mesh: a 1-d :class:`DeviceMesh` (the world's by default) to shard over, or a 2-d one
            for HSDP: replicated over dim 0, sharded over dim 1.
        reshard_after_forward: free the gathered parameters after forward (gather them
            again in backward); False keeps them (as the module's attributes) until backward
            ends; None (PyTorch's default): True, but False for the root (the module
            whose forward runs in no other's). An int ``k`` dividing the shard size:
            after forward keep ``k``-way pieces (over ``k`` consecutive ranks), gathered
            over those ``k`` ranks in backward (1 is False, the shard size True).
        mp_policy: a :class:`MixedPrecisionPolicy` (compute / reduce / output dtypes).
        offload_policy: :class:`OffloadPolicy` or :class:`CPUOffloadPolicy` (the pieces are
            CPU tensors in either case).
        ignored_params: parameters left alone (not sharded, not reduced).

    Example (``ember launch -n 2``):
        >>> for block in model.blocks:
        ...     fully_shard(block)
        >>> fully_shard(model)
        >>> opt = ember.optim.AdamW(model.parameters(), lr=1e-3)   # the Shard(0) pieces
        >>> F.cross_entropy(model(x_local), y_local).backward(); opt.step()
    """
    owner = f"fully_shard({type(module).__name__})"
    if not isinstance(module, nn.Module):
        raise TypeError(f"fully_shard: expected an nn.Module, got {type(module).__name__}")
    if isinstance(module, FSDPModule):
        raise ArgumentError(f"{owner}: the module is already sharded (fully_shard was applied "
                            "to it); apply fully_shard once per module")
    mesh = _check_mesh(owner, mesh)
    mp_policy = mp_policy if mp_policy is not None else MixedPrecisionPolicy()
    offload_policy = offload_policy if offload_policy is not None else OffloadPolicy()
    if not isinstance(mp_policy, MixedPrecisionPolicy):
        raise TypeError(f"{owner}: mp_policy must be a MixedPrecisionPolicy, got {mp_policy!r}")
    if not isinstance(offload_policy, OffloadPolicy):
        raise TypeError(f"{owner}: offload_policy must be an OffloadPolicy or CPUOffloadPolicy, "
                        f"got {offload_policy!r}")
    ignored = {id(p) for p in ignored_params or ()}
    found = [(fqn, m, name, p) for fqn, m, name, p in _own_params(module) if id(p) not in ignored]
    check_same_everywhere(mesh.get_all_groups(), "fully_shard expects the same module",
                          "parameters to shard", described(found),
                          SAME_MODEL_HINT)
    group = None
    if found:
        group = ShardedParamGroup(owner, found, mesh,
                                  _np_dtype(mp_policy.param_dtype),
                                  _np_dtype(mp_policy.reduce_dtype))
    reshard = _check_reshard(reshard_after_forward, mesh)
    if group is not None and not isinstance(reshard, bool | None):
        group.reshard_after_forward_to(reshard)
    state = FSDPState(group, mesh, reshard, mp_policy, offload_policy)
    object.__setattr__(module, "_fsdp_state", state)
    module.register_state_dict_post_hook(_sharded_entries)
    module.register_load_state_dict_pre_hook(_local_entries)
    module.__class__ = _fsdp_class(type(module))
    for slot in group.slots if group is not None else ():
        if slot.module is not module:
            _guard(slot.module)
    return module


def _sharded_entries(module: FSDPModule, destination: dict, prefix: str, _: Any) -> None:
    """State dict post-hook: the sharded parameters' entries become ``Shard(0)`` DTensors of
    their global shapes."""
    state = module._fsdp_state
    if state.group is None:
        return
    for fqn, index in state.group.fqns():
        key = prefix + fqn
        value = destination.get(key)
        if isinstance(value, Tensor):
            destination[key] = DTensor.from_local(value, state.mesh, state.group.placements,
                                                  shape=state.group.shapes[index])


def _own_params(module: nn.Module) -> list[tuple[str, nn.Module, str, Parameter]]:
    """``(fqn, module, name, parameter)`` of every parameter registration in ``module``'s
    tree outside nested ``fully_shard`` modules."""
    found, todo = [], [("", module)]
    while todo:
        prefix, m = todo.pop(0)
        for name, p in m._parameters.items():
            if p is not None:
                found.append((prefix + name, m, name, p))
        todo.extend((f"{prefix}{name}.", c) for name, c in m._modules.items()
                    if c is not None and not isinstance(c, FSDPModule))
    return found


def _check_mesh(owner: str, mesh: Any) -> DeviceMesh:
    mesh = mesh if mesh is not None else world_mesh()
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"{owner}: mesh must be a DeviceMesh (init_device_mesh), got "
                        f"{type(mesh).__name__}")
    if mesh.ndim not in (1, 2):
        raise ArgumentError(f"{owner}: mesh must be 1-d (the ranks to shard over) or 2-d (HSDP: "
                            f"replicate over dim 0, shard over dim 1), got a {mesh.ndim}-d mesh "
                            f"of shape {mesh.shape}. Hint: pass mesh['dp'] or "
                            "mesh['replicate', 'shard'], a slice of it")
    if mesh.get_coordinate() is None:
        raise ArgumentError(f"{owner}: this rank is not in the mesh {mesh}")
    return mesh


def _check_reshard(value: Any, mesh: DeviceMesh) -> bool | int | None:
    if value is None or isinstance(value, bool):
        return value
    shard = mesh.size(mesh.ndim - 1)
    if not isinstance(value, int) or value < 1 or shard % value:
        raise ArgumentError(f"fully_shard: reshard_after_forward should be a bool, None or an int "
                            f"dividing the {shard} ranks sharding (the ranks to reshard to after "
                            f"forward), not {value!r}")
    if value == 1 or value == shard:  # (as PyTorch's: 1 keeps them, the shard size frees)
        return value != 1
    return value
