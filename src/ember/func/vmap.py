"""``vmap``: vectorizing map. ``vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, in one call.

Inside the mapped function each batched input is a *logical* tensor, of the shape one sample
has; a dispatch handler (:class:`_BatchTrace`) intercepts every primitive, runs its batching
rule (``ember.func.batching``) on the *physical* tensors, whose batch axis is axis 0, and hands
back logical tensors again. A logical tensor's array is a view of its physical array's first
sample (so shapes, dtypes and in-place writes behave); the trace finds the physical tensor by
the identity of that array, so aliases (``detach()``, a node's saved output) resolve too.

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
from ember.errors import OpError, ShapeError
from ember.func.batching import ALWAYS, RULES, move
from ember.ops.primitive import (
    _FLOAT,
    _record,
    apply_below,
    pop_handler,
    push_handler,
    run_below,
)
from ember.tensor import Tensor, _wrap

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


class _BatchTrace:
    """The dispatch handler of one vmap level: batch size and the physical tensor behind each
    logical tensor it made."""

    def __init__(self, size: int, randomness: str) -> None:
        self.size = size
        self.randomness = randomness
        self.table: dict[int, tuple[Any, Tensor]] = {}  # id(logical array) -> (array, physical)

    def physical(self, t: Tensor) -> Tensor | None:
        entry = self.table.get(id(t._data))
        return entry[1] if entry is not None and entry[0] is t._data else None

    def logical(self, phys: Tensor, requires_grad: bool = False, vc: Any = None) -> Tensor:
        """A logical tensor for the batched ``phys`` (batch axis 0)."""
        a = phys._data
        data = a[0, ...] if self.size else phys.device.xp.zeros(a.shape[1:], a.dtype)
        self.table[id(data)] = (data, phys)
        return _wrap(data, phys._device, requires_grad, None, 0, vc)

    # -- the handler ------------------------------------------------------------------------
    def __call__(self, prim: Any, inputs: tuple, params: dict) -> Any:
        phys = [self.physical(t) for t in inputs]
        name = prim.name
        always = name in ALWAYS
        if not always and all(p is None for p in phys):
            return apply_below(self, prim, inputs, params)
        rule = RULES.get(name)
        if rule is None:
            raise OpError(f"vmap: the primitive {name} has no batching rule. Hint: register "
                          "one in ember.func.batching")
        xs = tuple(t if p is None else p for t, p in zip(inputs, phys))
        bs = tuple(p is not None for p in phys)
        if always:
            out, is_batched = run_below(self, rule, self.size, xs, bs,
                                        randomness=self.randomness, **params)
            if not is_batched:
                return out
        else:
            out = run_below(self, rule, self.size, xs, bs, **params)
        outs = out if prim.nout > 1 else (out,)
        record = GRAD.enabled and prim.differentiable and any(t.requires_grad for t in inputs)
        vc = inputs[0]._vc if prim.view else None
        tensors = [self.logical(o, record and o._data.dtype in _FLOAT, vc) for o in outs]
        if record:
            _record(prim, inputs, params, tensors, tensors[0]._device)
        return tensors[0] if prim.nout == 1 else tuple(tensors)

    def on_value_read(self, t: Tensor, what: str) -> None:
        """Python reads a tensor's values: refused for batched tensors (one value per sample)."""
        if self.physical(t) is not None:
            raise OpError(
                f"vmap: {what} of a batched tensor (per-sample shape {tuple(t.shape)}): inside "
                "vmap it has a different value for each sample, which Python code cannot "
                "branch on or read. Hint: use tensor ops instead (e.g. ember.where(cond, a, b) "
                "for an if), or move the read outside vmap")

    def on_inplace(self, target: Tensor, result: Tensor) -> None:
        """An in-place op wrote ``result`` into ``target``: write all samples, not only the
        first one the logical array shows."""
        t_phys, r_phys = self.physical(target), self.physical(result)
        if t_phys is None:
            if r_phys is not None:
                raise OpError(
                    f"vmap: an in-place op writes a batched value into an unbatched tensor of "
                    f"shape {tuple(target.shape)}, which has room for one sample only. Hint: "
                    "use the out-of-place form, or make the tensor batched (e.g. pass it "
                    "through vmap's in_dims)")
            return
        src = result if r_phys is None else r_phys
        run_below(self, _copy_into, t_phys, src)


def _copy_into(target: Tensor, src: Tensor) -> None:
    target.copy_(src)


# -- pytrees (tuples, lists, dicts of tensors and other leaves) --------------------------------
def _flatten(tree: Any) -> tuple[list, Any]:
    if isinstance(tree, (tuple, list)):
        leaves, defs = [], []
        for item in tree:
            sub, d = _flatten(item)
            leaves += sub
            defs.append((len(sub), d))
        return leaves, (type(tree), defs)
    if isinstance(tree, dict):
        leaves, defs = _flatten(list(tree.values()))
        return leaves, (dict, (list(tree.keys()), defs))
    return [tree], None


def _unflatten(leaves: list, treedef: Any) -> Any:
    if treedef is None:
        return leaves[0]
    kind, defs = treedef
    if kind is dict:
        keys, sub = defs
        return dict(zip(keys, _unflatten(leaves, sub)))
    items, i = [], 0
    for n, d in defs:
        items.append(_unflatten(leaves[i:i + n], d))
        i += n
    return kind(items) if kind in (tuple, list) else kind(*items)


def _dims_for(dims: Any, tree: Any, what: str) -> list:
    """One dim (int or None) per leaf of ``tree``: ``dims`` is one for all, or a pytree
    with the same structure as ``tree`` (or a prefix of it)."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(dims) != len(tree):
            raise ValueError(f"vmap: {what} has {len(dims)} entries for {len(tree)} values; "
                             f"{what}={dims!r}")
        return [d for sub_d, sub_t in zip(dims, tree) for d in _dims_for(sub_d, sub_t, what)]
    if isinstance(dims, dict) and isinstance(tree, dict):
        if set(dims) != set(tree):
            raise ValueError(f"vmap: {what} keys {sorted(dims)} differ from {sorted(tree)}")
        return [d for k in tree for d in _dims_for(dims[k], tree[k], what)]
    raise ValueError(f"vmap: {what}={dims!r} does not match the structure of the values; "
                     "give an int, None, or a tuple/list/dict of those shaped like them")


# -- vmap ------------------------------------------------------------------------------------
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
        chunk_size: if given, run the batch in chunks of this size (less peak memory).

    Example:
        >>> x = ember.randn(8, 3); w = ember.randn(3)
        >>> ember.func.vmap(ember.dot, in_dims=(0, None))(x, w).shape
        (8,)
    """
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")
    if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
        raise ValueError(f"vmap: in_dims must be an int, None or a tuple, got {in_dims!r}")

    @functools.wraps(func)
    def mapped(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = _flatten(args)
        dims = _dims_for(in_dims if not isinstance(in_dims, list) else tuple(in_dims),
                         args, "in_dims")
        size = _batch_size(leaves, dims)
        if chunk_size is None or chunk_size >= size:
            return _run(func, leaves, treedef, dims, kwargs, size, out_dims, randomness)
        from ember.ops.join import cat

        pieces = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            chunk = [x if d is None else x.narrow(d, start, stop - start)
                     for x, d in zip(leaves, dims)]
            pieces.append(_run(func, chunk, treedef, dims, kwargs, stop - start, out_dims,
                               randomness))
        outs = [_flatten(p)[0] for p in pieces]
        flat, out_def = _flatten(pieces[0])
        odims = _dims_for(out_dims, pieces[0], "out_dims")
        joined = [o[0] if d is None else cat(list(o), dim=d)
                  for o, d in zip(zip(*outs), odims)]
        return _unflatten(joined, out_def)

    return mapped


def _batch_size(leaves: list, dims: list) -> int:
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap: in_dim {d} given for a {type(x).__name__}, not a tensor; "
                             "use None for non-tensor inputs")
        if not -x.ndim <= d < x.ndim:
            raise ShapeError(f"vmap: in_dim {d} is out of range for an input of shape "
                             f"{tuple(x.shape)}")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: no input is batched (every in_dim is None or no tensors were "
                         "passed); at least one tensor input needs a batch dimension")
    if len(set(sizes)) > 1:
        raise ShapeError(f"vmap: the batched inputs have different sizes {sizes} in their "
                         "mapped dimensions; they must all be the same")
    return sizes[0]


def _run(func: Callable, leaves: list, treedef: Any, dims: list, kwargs: dict, size: int,
         out_dims: Any, randomness: str) -> Any:
    trace = _BatchTrace(size, randomness)
    inputs = [x if d is None else trace.logical(move(x, d, 0)) for x, d in zip(leaves, dims)]
    push_handler(trace)
    try:
        out = func(*_unflatten(inputs, treedef), **kwargs)
    finally:
        pop_handler(trace)
    flat, out_def = _flatten(out)
    odims = _dims_for(out_dims, out, "out_dims")
    results = []
    for o, d in zip(flat, odims):
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap: the function must return tensors (or pytrees of them), "
                             f"it returned a {type(o).__name__}")
        phys = trace.physical(o)
        if d is None:
            if phys is not None:
                raise ValueError("vmap: out_dims is None for an output that is batched; give "
                                 "it an int out_dim")
            results.append(o)
            continue
        if phys is None:  # unbatched: every sample's output is the same
            shape = tuple(o.shape)
            phys = o.reshape((1,) + shape).expand((size,) + shape)
        if not -phys.ndim <= d < phys.ndim:
            raise ShapeError(f"vmap: out_dim {d} is out of range for an output with "
                             f"{phys.ndim - 1} dimensions")
        results.append(move(phys, 0, d))
    return _unflatten(results, out_def)
