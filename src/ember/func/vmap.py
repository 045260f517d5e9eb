"""``vmap``: vectorizing map. ``vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, in one call.

Inside the mapped function each batched input is a *logical* tensor, of the shape one sample
has; a dispatch handler (:class:`_BatchTrace`) intercepts every primitive, runs its batching
rule (``ember.func.batching``) on the *physical* tensors, whose batch axis is axis 0, and hands
back logical tensors again. A logical tensor's array is a view of its physical array's first
sample (so shapes, dtypes and in-place writes behave); the trace finds the physical tensor by
the identity of that array, so aliases (a node's saved output) resolve too; ``detach()``
stands for the detached physical tensor, so a tape or ``jvp`` outside stops there too.

Autograd inside the mapped function works on the logical level: when a logical input requires
a gradient the trace records a tape node on the logical tensors, and a backward pass run
inside the function evaluates the vjp rules, again batched. So ``vmap(grad(f))`` gives
per-sample gradients. Ops under an *outer* transform or ``grad`` see the physical ops.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import GRAD
from ember.errors import (
    ArgumentError,
    BatchedWriteError,
    GradError,
    IndexOutOfRange,
    OpError,
    ShapeError,
)
from ember.func.batching import ALWAYS, RULES, move
from ember.func.function_vmap import (  # (VmapInfo, NestedRuleBackward: imported from here)
    NestedRuleBackward,
    VmapInfo,
    _no_batched_kwargs,
    _RuleCtx,
    differentiated_below,
    function_per_sample,
    function_vmap,
)
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.func.vmap_aliases import copy_memory, own_tensor, owner_below
from ember.ops.overrides import TENSOR_LIKE
from ember.ops.primitive import (
    _FLOAT,
    DISPATCH,
    ViewInfo,
    _record,
    apply_below,
    pop_handler,
    push_handler,
    refresh_view,
    run_below,
)
from ember.ops.random import get_rng_state, set_rng_state
from ember.other_threads import OtherThreadsTensors
from ember.tensor import Tensor, _wrap

__all__ = ["NestedRuleBackward", "VmapInfo", "debug_unwrap", "vmap"]

_RANDOMNESS = ("error", "different", "same")


class BatchedValueRead(OpError):
    """Python code read the values of a batched tensor (``.item()``, ``.numpy()``, ``if``)."""


class _BatchTrace:
    """The dispatch handler of one vmap level: batch size and the physical tensor behind each
    logical tensor it made."""

    def __init__(self, size: int, randomness: str) -> None:
        self.size = size
        self.randomness = randomness
        self.table: dict[int, tuple[Any, Tensor]] = {}  # id(logical array) -> (array, physical)
        self.others = OtherThreadsTensors()
        self.aliases: dict[int, tuple] = {}  # id(in-place alias) -> (it, own physical, x's)

    def physical(self, t: Tensor) -> Tensor | None:
        entry = self.table.get(id(t._data))
        return entry[1] if entry is not None and entry[0] is t._data else None

    def logical(self, phys: Tensor, requires_grad: bool = False, vc: Any = None) -> Tensor:
        """A logical tensor for the batched ``phys`` (batch axis 0)."""
        return _wrap(self.sample(phys), phys._device, requires_grad, None, 0, vc)

    def sample(self, phys: Tensor) -> Any:
        """The array of a logical tensor for ``phys``: a view of its first sample."""
        a = phys._data
        data = a[0, ...] if self.size else phys.device.xp.zeros(a.shape[1:], a.dtype)
        self.table[id(data)] = (data, phys)
        return data

    # -- the handler ------------------------------------------------------------------------
    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        table, xs, bs = self.table, [], []  # (the hot path: inlined self.physical)
        for t in inputs:
            entry = table.get(id(t._data))
            batched_t = entry is not None and entry[0] is t._data
            xs.append(entry[1] if batched_t else t)
            bs.append(batched_t)
        if self.others.arrays:
            for t in inputs:
                self.not_from_another_thread(t)
        name = prim.name
        always = name in ALWAYS
        if not always and True not in bs:
            return apply_below(self, prim, inputs, params)
        rule = RULES.get(name)
        if rule is None:
            raise OpError(f"vmap: the primitive {name} has no batching rule. Hint: register "
                          "one in ember.func.batching")
        xs, bs = tuple(xs), tuple(bs)
        if always:
            out, is_batched = run_below(self, rule, self.size, xs, bs,
                                        randomness=self.randomness, **params)
            if not is_batched:
                return out
        else:
            out = run_below(self, rule, self.size, xs, bs, **params)
        record = False
        if GRAD.enabled and prim.differentiable:
            for t in inputs:  # a view whose base was written in place since: new history
                if t._view is not None and t._view.version != t._vc.value:
                    refresh_view(t)
                record = record or t.requires_grad
        if prim.nout == 1:
            tensors = [self.logical(out, record and out._data.dtype in _FLOAT)]
        else:
            tensors = [self.logical(o, record and o._data.dtype in _FLOAT) for o in out]
            for i in range(1, len(tensors)):
                tensors[i]._idx = i  # which output slot of the node its gradient goes to
        if record:
            _record(prim, inputs, params, tensors, tensors[0]._device)
        if prim.view:
            _logical_view(inputs[0], tensors[0], prim, params)
        return tensors[0] if prim.nout == 1 else tuple(tensors)

    def apply_function(self, cls: type, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """A custom ``autograd.Function`` called at this level (``Function.apply``): with a
        ``vmap`` static method, that runs once on the physical arguments; without one, its
        ``forward`` runs here, so each Ember op in it is batched, or, when a derivative from
        outside the vmap must go through its ``backward`` or ``jvp``, once per sample below.
        Returns ``(outputs, ctx)``."""
        from ember.autograd.function import Function, _run, run_function

        phys = [self.physical(a) if isinstance(a, Tensor) else None for a in args]
        if all(p is None for p in phys):
            _no_batched_kwargs(self, cls, kwargs)
            return run_below(self, run_function, cls, args, kwargs)
        if cls.vmap is not Function.vmap:
            return function_vmap(self, cls, args, phys, kwargs), _RuleCtx(cls.__name__)
        if differentiated_below(self, args, phys):
            return function_per_sample(self, cls, args, phys, kwargs), _RuleCtx(cls.__name__)
        try:
            return _run(cls, args, kwargs)
        except OpError as exc:
            raise OpError(f"{exc}\n(in {cls.__name__}.forward, run under vmap op by op. Hint: "
                          f"a forward that leaves Ember ops (NumPy, .item()) needs a "
                          f"`@staticmethod def vmap(info, in_dims, *args)` on "
                          f"{cls.__name__})") from exc

    def not_from_another_thread(self, t: Any) -> None:
        """Refuses a tensor another thread computed while this vmap ran: that thread's ops
        are not batched, so it saw the first sample of each logical tensor only."""
        if isinstance(t, Tensor) and self.others.made(t._data):
            raise OpError(f"vmap: a tensor (shape {tuple(t.shape)}) made in another thread "
                          "while the function was being mapped is used; that thread's ops "
                          "are not batched (vmap is per thread), so from a batched tensor it "
                          "computed the first sample's value only. Hint: run the work in the "
                          "mapped function's own thread")

    def per_sample(self, t: Tensor) -> bool:
        """Whether ``t`` is batched at this level (one value per sample)."""
        return self.physical(t) is not None

    def made_from(self, t: Tensor, make: Callable[[Tensor], Tensor]) -> Tensor | None:
        """A tensor made from ``t`` (``zeros_like(t)``, ``t.new_zeros(n)``; see
        ``ember.ops.creation.made_per_sample``): batched, made from ``t``'s batch, when ``t``
        is batched; None when it is not."""
        phys = self.physical(t)
        if phys is None:
            return None
        out = run_below(self, make, phys)
        return self.logical(out, out.requires_grad)

    def on_value_read(self, t: Tensor, what: str) -> str | None:
        """Python reads a tensor's values: refused for batched tensors (one value per sample);
        printing one shows every sample, as torch's ``BatchedTensor(lvl, bdim, value)``."""
        phys = self.physical(t)
        if phys is not None and what == "printing":
            level = 1 + sum(isinstance(h, _BatchTrace)
                            for h in DISPATCH.stack[:DISPATCH.stack.index(self)])
            value = repr(phys).replace("\n", "\n    ")
            return f"BatchedTensor(lvl={level}, bdim=0, value=\n    {value}\n)"
        if phys is not None:
            raise BatchedValueRead(
                f"vmap: {what} of a batched tensor (per-sample shape {tuple(t.shape)}): inside "
                "vmap it has a different value for each sample, which Python code cannot "
                "branch on or read. Hint: use tensor ops instead (e.g. ember.where(cond, a, b) "
                "for an if), or move the read outside vmap")

    def on_data_set(self, t: Tensor, value: Tensor) -> None:
        """``t.data = value``: refused where either is batched (as torch.func does), since
        the swap of arrays bypasses the batch and the tape recorded below."""
        if self.per_sample(t) or self.per_sample(value):
            raise GradError(
                f"vmap: `.data =` with a batched tensor (shapes {tuple(t.shape)} and "
                f"{tuple(value.shape)} per sample) is not allowed: it swaps one sample's memory "
                "past the batch and the gradient history. Hint: rebind the name (b = value), "
                "or write in place with b.copy_(value)")

    def on_detach(self, out: Tensor, t: Tensor) -> bool:
        """``out = t.detach()`` (or ``t.detach_()``, ``out`` is ``t``): ``out`` stands for the
        detached physical tensor (the same memory), so a gradient recorded below
        (``grad(vmap(f))``) stops there too."""
        phys = self.physical(t)
        if phys is None:
            return False
        out._data = self.logical(run_below(self, Tensor.detach, phys))._data
        return True

    def on_alias(self, alias: Tensor, x: Tensor) -> None:
        """An in-place op made ``alias`` of the old ``x`` to compute from: it stands for a
        physical tensor of its own on the same memory (at every vmap level), so that a tape
        below (``grad(vmap(f))``) saves that one, not the one the write moves; see
        :meth:`before_write`."""
        phys = self.physical(x)
        if phys is not None and GRAD.enabled and not (phys.requires_grad and phys.is_leaf):
            own = own_tensor(self, phys)
            self.aliases[id(alias)] = (alias, own, phys)  # (held: its id stays its own)
            alias._data = self.sample(own)

    def before_write(self, alias: Tensor, result: Tensor) -> None:
        """The in-place op computed ``result`` from ``alias`` and is about to write it: where
        a gradient was recorded below for it (its batched op may have saved the alias's
        physical tensor), that tensor gets a copy of the memory the write changes. A batched
        ``result`` for an unbatched tensor is refused here, before the write changes it."""
        held = self.aliases.pop(id(alias), None)
        if held is None:
            if self.physical(alias) is None and self.physical(result) is not None:
                raise BatchedWriteError(
                    f"vmap: an in-place op writes a batched value into an unbatched tensor of "
                    f"shape {tuple(alias.shape)}, which has room for one sample only. Hint: "
                    "use the out-of-place form, or make the tensor batched (e.g. pass it "
                    "through vmap's in_dims)")
            return
        _, own, phys = held
        trace, t = self, self.physical(result)
        while t is not None and not t.requires_grad:  # (down to the eager op)
            trace, t = owner_below(trace, t)
        if t is not None:
            copy_memory(self, own, phys)

    def on_saved_copy(self, copy: Tensor, x: Tensor) -> None:
        """An in-place op's backward keeps ``copy`` of ``x``'s value before the write (see
        ``ember.ops.inplace``): copy every sample, not only the first one the logical array
        shows, with its history below (``grad(vmap(grad(f)))`` differentiates the copy)."""
        phys = self.physical(x)
        if phys is not None:
            copy._data = self.sample(run_below(self, Tensor.clone, phys))

    def on_metadata_change(self, x: Tensor, name: str, traceable: bool) -> None:
        """``x`` changes its shape or strides in place (``unsqueeze_``, ``t_``, ...): followed,
        as torch.func does (its view op is batched as any other, and ``x`` takes the logical
        array of the result); ``resize_`` of an unbatched tensor too (as torch.func's), but of
        a batched one, and ``set_``, are refused."""
        if traceable or (name == "resize_" and not self.per_sample(x)):
            return
        if name == "resize_":
            raise GradError(
                f"resize_: cannot resize a batched tensor (per-sample shape {tuple(x.shape)}) "
                "inside vmap: each sample's memory would have to grow or shrink apart "
                "(torch.func resizes the batch's memory as one, which mixes samples when the "
                "number of elements changes). Hint: x = x.reshape(...) for the same number "
                "of elements, or make a new tensor (x.new_zeros(...))")
        raise GradError(f"{name}: not supported inside vmap")

    def on_inplace(self, target: Tensor, result: Tensor) -> None:
        """An in-place op wrote ``result`` into ``target``: write all samples, not only the
        first one the logical array shows (a batched ``result`` for an unbatched ``target``
        was refused by :meth:`before_write`)."""
        t_phys, r_phys = self.physical(target), self.physical(result)
        if t_phys is None:
            return
        src = result if r_phys is None else r_phys
        run_below(self, _copy_into, t_phys, src)


def _logical_view(src: Tensor, out: Tensor, prim: Any, params: dict) -> None:
    """Makes the logical output of a view primitive a view of ``src`` as eager mode does
    (``_view_of``): the same version counter and a :class:`ViewInfo`, so that an in-place
    write into it moves its base's history too (``vmap(grad(f))`` through ``y[1:].mul_()``)."""
    xp = out._device.xp
    if not (out._data.size == 0 or xp.may_share_memory(out._data, src._data)):
        return  # the batched rule copied (a reshape of a non-contiguous batch)
    out._vc = src._vc
    if not prim.differentiable:  # (view(dtype): no autograd view)
        return
    out._view = ViewInfo.extending(src, prim, params)


def _copy_into(target: Tensor, src: Tensor) -> None:
    target.copy_(src)


# -- pytrees (tuples, lists, dicts of tensors and other leaves) --------------------------------
def _flatten(tree: Any) -> tuple[list, Any]:
    """Leaves and structure by :mod:`ember.func.pytree` (registered node types included)."""
    return tree_flatten(tree)


def _unflatten(leaves: list, treedef: Any) -> Any:
    return tree_unflatten(list(leaves), treedef)


def _dims_for(dims: Any, tree: Any, what: str, who: str = "vmap") -> list:
    """One dim (int or None) per leaf of ``tree``: ``dims`` is one for all, or a pytree
    with the same structure as ``tree`` (or a prefix of it)."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(dims) != len(tree):
            raise ArgumentError(f"{who}: {what} has {len(dims)} entries for {len(tree)} values; "
                                f"{what}={dims!r}")
        return [d for sub_d, sub_t in zip(dims, tree)
                for d in _dims_for(sub_d, sub_t, what, who)]
    if isinstance(dims, dict) and isinstance(tree, dict):
        if set(dims) != set(tree):
            raise ArgumentError(f"{who}: {what} keys {sorted(dims)} differ from {sorted(tree)}")
        return [d for k in tree for d in _dims_for(dims[k], tree[k], what, who)]
    if not isinstance(dims, (tuple, list, dict)):
        raise ArgumentError(f"{who}: {what} holds {dims!r}; each entry is an int or None")
    raise ArgumentError(f"{who}: {what} entry {dims!r} does not match the structure of the "
                        "values; give an int, None, or a tuple/list/dict of those shaped like them")


# -- vmap ------------------------------------------------------------------------------------
def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """For debugging inside :func:`vmap`: the tensor holding every sample of ``tensor``
    (batch axis first), as ``torch.func.debug_unwrap``; with ``recurse``, through every
    enclosing vmap level (else the innermost one only). Outside vmap, or for a tensor the
    level does not batch, ``tensor`` itself.

    Example:
        >>> seen = []
        >>> _ = ember.func.vmap(lambda r: seen.append(ember.func.debug_unwrap(r).shape) or r)(
        ...     ember.ones(3, 2))
        >>> seen
        [ember.Size([3, 2])]
    """
    for handler in reversed(DISPATCH.stack):
        if isinstance(handler, _BatchTrace) and (phys := handler.physical(tensor)) is not None:
            tensor = phys
            if not recurse:
                break
    return tensor


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable[..., Any]:
    """Vectorizes ``func`` over a batch dimension of its inputs, as ``torch.func.vmap``.

    Args:
        func: a function of tensors (pytrees of them) returning tensors (or pytrees).
        in_dims: the batch dim of each positional input: an int or None for all, or a
            tuple with one entry per argument (an int, None for unbatched, or a pytree).
        out_dims: where the batch dim goes in each output (an int for all, or per output).
        randomness: random ops inside ``func``: ``"error"`` (refuse them), ``"different"``
            (independent samples per batch entry) or ``"same"`` (one draw for all).
        chunk_size: if given, run the batch in chunks of this size (less peak memory); with
            ``randomness="same"`` each chunk starts from the same random state, so all
            samples still share one draw.

    Example:
        >>> x = ember.randn(8, 3); w = ember.randn(3)
        >>> ember.func.vmap(ember.dot, in_dims=(0, None))(x, w).shape
        ember.Size([8])
    """
    if randomness not in _RANDOMNESS:
        raise ArgumentError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ArgumentError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")
    who = f"vmap({getattr(func, '__name__', None) or type(func).__name__})"
    if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
        raise ArgumentError(f"{who}: in_dims must be an int, None or a tuple, got {in_dims!r}")

    @functools.wraps(func)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = _flatten(args)
        dims = _dims_for(in_dims if not isinstance(in_dims, list) else tuple(in_dims),
                         args, "in_dims", who)
        owners = [i for i, a in enumerate(args) for _ in _flatten(a)[0]]
        size = _batch_size(leaves, dims, owners, who)
        if chunk_size is None or chunk_size >= size:
            return _run(func, leaves, treedef, dims, kwargs, size, out_dims, randomness, who)
        from ember.ops.join import cat

        pieces = []
        state = get_rng_state() if randomness == "same" else None
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            if state is not None:  # every chunk draws what the first did (as PyTorch)
                set_rng_state(state)
            chunk = [x if d is None else x.narrow(d, start, stop - start)
                     for x, d in zip(leaves, dims)]
            pieces.append(_run(func, chunk, treedef, dims, kwargs, stop - start, out_dims,
                               randomness, who))
        outs = [_flatten(p)[0] for p in pieces]
        flat, out_def = _flatten(pieces[0])
        odims = _dims_for(out_dims, pieces[0], "out_dims", who)
        joined = [o[0] if d is None else cat(list(o), dim=d)
                  for o, d in zip(zip(*outs), odims)]
        return _unflatten(joined, out_def)

    return mapped


def _batch_size(leaves: list, dims: list, owners: list, who: str) -> int:
    """The batch size; ``owners[i]`` is the positional argument that leaf ``i`` is in."""
    sizes = {}
    for x, d, i in zip(leaves, dims, owners):
        if d is None:
            continue
        if type(x) in TENSOR_LIKE:
            raise ArgumentError(f"{who}: in_dim {d} given for argument {i}, a "
                                f"{type(x).__name__}, which vmap does not map over. Hint: map "
                                "over its sequences, nt.unbind()")
        if not isinstance(x, Tensor):
            raise ArgumentError(f"{who}: in_dim {d} given for argument {i}, a "
                                f"{type(x).__name__}, not a tensor; use None for non-tensor "
                                "inputs")
        if x.ndim == 0:
            raise ShapeError(f"{who}: in_dim {d} given for argument {i}, a 0-d tensor, which "
                             "has no dimension to map over. Hint: in_dim None passes it to "
                             "every sample as it is")
        if not -x.ndim <= d < x.ndim:
            raise ShapeError(f"{who}: in_dim {d} is out of range for argument {i}, of shape "
                             f"{tuple(x.shape)} (expected {-x.ndim} <= in_dim < {x.ndim})")
        sizes.setdefault(x.shape[d], i)
    if not sizes:
        raise ArgumentError(f"{who}: no input is batched (every in_dim is None or no tensors "
                            "were passed); at least one tensor input needs a batch dimension")
    if len(sizes) > 1:
        raise ShapeError(f"{who}: the batched inputs have different sizes in their mapped "
                         "dimensions: " + ", ".join(f"{n} (argument {i})"
                                                    for n, i in sizes.items()) +
                         "; they must all be the same")
    return next(iter(sizes))


def _run(func: Callable, leaves: list, treedef: Any, dims: list, kwargs: dict, size: int,
         out_dims: Any, randomness: str, who: str = "vmap") -> Any:
    trace = _BatchTrace(size, randomness)
    inputs = [x if d is None else trace.logical(move(x, d, 0)) for x, d in zip(leaves, dims)]
    push_handler(trace)
    try:
        with trace.others:
            out = func(*_unflatten(inputs, treedef), **kwargs)
    finally:
        pop_handler(trace)
    flat, out_def = _flatten(out)
    for o in flat:
        trace.not_from_another_thread(o)
    odims = _dims_for(out_dims, out, "out_dims", who)
    results = []
    for j, (o, d) in enumerate(zip(flat, odims)):
        if not isinstance(o, Tensor) and d is not None:
            raise ArgumentError(f"{who}: the function must return tensors (or pytrees of them), "
                                f"output {j} is a {type(o).__name__}. Hint: out_dims=None for "
                                "an output that is not a tensor")
        phys = None if d is None and not isinstance(o, Tensor) else trace.physical(o)
        if d is None:
            if phys is not None:
                raise ArgumentError(f"{who}: out_dims is None for output {j}, which is batched; "
                                    "give it an int out_dim")
            results.append(o)
            continue
        if phys is None:  # unbatched: every sample's output is the same
            shape = tuple(o.shape)
            phys = o.reshape((1,) + shape).expand((size,) + shape)
        if not -phys.ndim <= d < phys.ndim:
            raise IndexOutOfRange(f"{who}: out_dim {d} is out of range for output {j}, which "
                                  f"has {phys.ndim - 1} dimensions per sample (out_dims may "
                                  f"be -{phys.ndim} to {phys.ndim - 1})")
        results.append(move(phys, 0, d))
    return _unflatten(results, out_def)
