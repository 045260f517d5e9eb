"""``ember.func.functional_call`` (also PyTorch's older, deprecated spelling
``nn.utils.stateless.functional_call``): runs a module with some of its parameters and buffers
replaced by given tensors, which makes a model a function of its parameters (for ``grad``,
``jacrev``, ``vmap`` over ensembles, meta-learning)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["functional_call"]


def _slots(module: Any) -> dict[str, tuple[Any, str, dict]]:
    """Every parameter and buffer name (tied ones under each of their names) ->
    (owning module, attribute, the dict holding it)."""
    out = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for store in (mod._parameters, mod._buffers):
            for name, value in store.items():
                if value is not None:
                    out[f"{prefix}.{name}" if prefix else name] = (mod, name, store)
    return out


def functional_call(module: Any, parameter_and_buffer_dicts: Mapping | Sequence[Mapping],
                    args: Any = None, kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Calls ``module(*args, **kwargs)`` with the named parameters and buffers in
    ``parameter_and_buffer_dicts`` (one dict, or several with distinct keys) in place of its
    own, restoring the originals afterwards, also when the call raises.

    Args:
        module: the module to run.
        parameter_and_buffer_dicts: ``{"layer.weight": tensor, …}``, names as in
            ``named_parameters()`` / ``named_buffers()``.
        args: the positional argument(s): a tuple, or a single value.
        kwargs: keyword arguments of the call.
        tie_weights: a tensor given for one name of a tied parameter (one object registered
            under several names) replaces it under every name, as PyTorch does.
        strict: every parameter and buffer must be given, and no other name (else a
            ``RuntimeError``, as PyTorch's); a parametrized tensor by its originals' names,
            as ``named_parameters()`` gives them.

    A value may be ``None``: the module runs without that parameter or buffer (e.g.
    ``{"bias": None}`` for a ``Linear``), as in PyTorch. A name on a submodule that does not
    exist raises ``AttributeError``.

    Example:
        >>> net = ember.nn.Linear(3, 1)
        >>> params = {k: ember.zeros_like(v) for k, v in net.named_parameters()}
        >>> ember.func.functional_call(net, params, (ember.ones(2, 3),))
        tensor([[0.],
                [0.]])
    """
    dicts = ([parameter_and_buffer_dicts] if isinstance(parameter_and_buffer_dicts, Mapping)
             else list(parameter_and_buffer_dicts))
    given: dict[str, Any] = {}
    for d in dicts:
        for name, value in d.items():
            if name in given:
                raise ArgumentError(f"functional_call: {name!r} appears in more than one of the "
                                    "given dicts")
            given[name] = value
    slots = _slots(module)
    if tie_weights:  # (before the strict checks: one name of a tied tensor gives all)
        by_object: dict[int, list[str]] = {}
        for name, (_mod, attr, store) in slots.items():
            by_object.setdefault(id(store[attr]), []).append(name)
        for names in by_object.values():
            chosen = [n for n in names if n in given]
            if len(chosen) > 1 and any(given[n] is not given[chosen[0]] for n in chosen):
                raise ArgumentError(f"functional_call: {chosen} are tied (one tensor) but were "
                                    "given different values; give one, or pass tie_weights=False")
            if chosen:
                for n in names:
                    given.setdefault(n, given[chosen[0]])
    # (PyTorch's message and type; before parametrized names become their originals: strict
    # mode, as PyTorch's, takes the names named_parameters() gives, the originals')
    unexpected, missing = sorted(set(given) - set(slots)), sorted(set(slots) - set(given))
    if strict and (unexpected or missing):
        parts = [f"{what} key(s): {', '.join(repr(k) for k in keys)}."
                 for what, keys in (("Unexpected", unexpected), ("Missing", missing)) if keys]
        raise ArgumentError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                            + "\n\t".join(parts))
    for name in [n for n in given if n not in slots and given[n] is not None]:
        originals = _originals(module, name, given[name])
        for original, value in originals.items():
            if original in given:
                raise ArgumentError(f"functional_call: {name!r} is parametrized and both it "
                                    f"and its original {original!r} were given; give one")
            given[original] = value
        if originals:
            del given[name]
    unexpected = sorted(set(given) - set(slots))
    for name in unexpected:  # a new name on a submodule that exists: set it as an attribute
        owner, _, attr = name.rpartition(".")
        try:
            module.get_submodule(owner)
        except AttributeError as exc:
            raise AttributeError(f"functional_call: {name!r} is not a parameter or buffer of "
                                 f"the module, and {owner!r} is not one of its submodules "
                                 f"({exc})") from exc
    for name, value in given.items():
        if value is not None and not isinstance(value, (Tensor, SparseTensor)):
            raise TypeError(f"functional_call: the value for {name!r} must be a tensor, "
                            f"dense or sparse (or None), got {type(value).__name__}")

    saved = []
    try:
        for name, value in given.items():
            if name in slots:
                mod, attr, store = slots[name]
                saved.append((store, attr, store[attr]))
                store[attr] = value
            else:
                owner, _, attr = name.rpartition(".")
                mod = module.get_submodule(owner) if owner else module
                saved.append((mod.__dict__, attr, mod.__dict__.get(attr, _ABSENT)))
                mod.__dict__[attr] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for store, attr, old in reversed(saved):
            if old is _ABSENT:
                store.pop(attr, None)
            else:
                store[attr] = old


_ABSENT = object()


def _originals(module: Any, name: str, value: Tensor) -> dict[str, Any]:
    """For ``name`` a parametrized tensor (``nn.utils.parametrize``): its originals' names ->
    the originals for ``value`` (its parametrizations' ``right_inverse``, with the gradient to
    ``value``), as PyTorch's functional_call assigns it; else empty."""
    owner, _, attr = name.rpartition(".")
    try:
        mod = module.get_submodule(owner) if owner else module
    except AttributeError:
        return {}
    parametrizations = mod.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or attr not in parametrizations:
        return {}
    chain = parametrizations[attr]
    new = chain._inverse(value, assigning=True)
    prefix = f"{owner}.parametrizations.{attr}." if owner else f"parametrizations.{attr}."
    if chain.is_tensor:
        return {prefix + "original": new}
    return {f"{prefix}original{i}": v for i, v in enumerate(new)}
