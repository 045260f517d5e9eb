"""Pruning, as ``torch.nn.utils.prune``: a parameter ``name`` of a module becomes
``name_orig`` (the trained parameter) times ``name_mask`` (a buffer of zeros and ones), and a
forward pre-hook recomputes the plain attribute ``name`` before every call. Pruning the same
parameter again combines the masks through a :class:`PruningContainer` (the new method only
sees what is still unpruned); :func:`remove` makes the pruning permanent. State-dict keys are
PyTorch's (``weight_orig``, ``weight_mask``).

``amount`` is an ``int`` (how many entries or channels) or a ``float`` in ``[0, 1]`` (that
fraction of them, rounded as Python's ``round``). Ties: among entries (or channels) of equal
importance Ember prunes the earliest ones (a stable sort); PyTorch leaves that choice to its
``topk`` kernel, so with ties the two may prune different entries, never a different number.
The random methods draw from Ember's generator, not PyTorch's.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, TypeVar

import ember
from ember.errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, ShapeError, type_name
from ember.nn.module import Module
from ember.nn.utils.convert_parameters import parameters_to_vector
from ember.tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]

M = TypeVar("M", bound=Module)


class BasePruningMethod(ABC):
    """The base of pruning methods: a subclass says which entries to keep
    (:meth:`compute_mask`) and its ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"``
    with a ``dim``, or ``"global"``), which tells a :class:`PruningContainer` how to combine
    it with earlier masks.

    Example:
        >>> class KeepPositive(prune.BasePruningMethod):
        ...     PRUNING_TYPE = "unstructured"
        ...     def compute_mask(self, t, default_mask):
        ...         return default_mask * (t > 0).to(default_mask.dtype)
        >>> KeepPositive().prune(ember.tensor([1., -2., 3.]))
        tensor([1., -0., 3.])
    """

    _tensor_name: str | None = None
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t``: ``default_mask`` (the current one) with more zeros."""

    def apply_mask(self, module: Module) -> Tensor:
        """``name_orig`` times ``name_mask``: the pruned tensor (differentiable in
        ``name_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prunes ``module.<name>`` with ``cls(*args, **kwargs)`` (on top of earlier pruning of
        it), ranking entries by ``importance_scores`` (default: the tensor itself); returns the
        method now attached to the module (a :class:`PruningContainer` when pruned before)."""
        method = _combined_with_earlier(cls(*args, **kwargs), module, name)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # as it was: the parameter under its own name
                orig = module._parameters.pop(name + "_orig")
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times the mask :meth:`compute_mask` makes from ``importance_scores`` (default
        ``t``), starting from ``default_mask`` (default all ones); no module involved."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                 f"got {importance_scores.shape} vs {t.shape}")
        default_mask = default_mask if default_mask is not None else ember.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Makes the pruning permanent: ``name`` is a parameter again, holding the pruned
        values; ``name_orig`` and ``name_mask`` are gone (the hook is :func:`remove`'s job)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _hooks_of(module: Module, name: str | None = None) -> list[tuple[int, BasePruningMethod]]:
    """The module's forward pre-hooks that are pruning methods (of ``name``), with their
    keys in ``module._forward_pre_hooks``."""
    return [(key, hook) for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod)
            and (name is None or hook._tensor_name == name)]


def _combined_with_earlier(method: BasePruningMethod, module: Module, name: str
                           ) -> BasePruningMethod:
    """Detaches an earlier pruning method of ``name`` from the module and returns ``method``
    combined with it (in a :class:`PruningContainer`), or ``method`` alone."""
    earlier = _hooks_of(module, name)
    if len(earlier) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    for key, _ in earlier:
        del module._forward_pre_hooks[key]
    method._tensor_name = name
    if not earlier:
        return method
    old = earlier[0][1]
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old
    container = PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The pruning methods applied to one tensor, in order; its mask is the last method's,
    computed only on what the earlier ones left (the unpruned entries, or the unpruned
    channels along the method's ``dim``).

    Example:
        >>> m = prune.l1_unstructured(nn.Linear(4, 2), "weight", amount=2)
        >>> m = prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
        >>> [type(p).__name__ for p in next(iter(m._forward_pre_hooks.values()))]
        ['L1Unstructured', 'LnStructured']
    """

    def __init__(self, *args: BasePruningMethod | Iterable[BasePruningMethod]) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args[0] if len(args) == 1 else args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        """Appends ``method``, which must act on the container's tensor."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise ArgumentTypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ArgumentError(f"Can only add pruning methods acting on the parameter named "
                                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                                f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask on the part of ``t`` that ``default_mask`` leaves."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            where: Any = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to "
                                     "have the attribute `dim` defined.")
            dim = method.dim + t.ndim if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexOutOfRange(f"Index is out of bounds for tensor of size {t.shape}")
            others = [d for d in range(t.ndim) if d != dim]
            keep = default_mask.sum(dim=others) != 0 if others else default_mask != 0
            where = tuple(keep if d == dim else slice(None) for d in range(t.ndim))
        elif kind == "global":
            where = tuple(slice(None) for _ in range(t.ndim))
        else:
            raise ArgumentError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones): puts a tensor under pruning's
    reparametrization.

    Example:
        >>> prune.identity(nn.Linear(2, 1), "weight").weight_mask
        tensor([[1., 1.]])
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:  # type: ignore[override]
        """Puts ``module.<name>`` under an all-ones mask."""
        return super().apply(module, name)


class _AmountMethod(BasePruningMethod):
    """A method that prunes ``amount`` entries or channels (an int, or a fraction)."""

    def __init__(self, amount: int | float) -> None:
        _check_amount(amount)
        self.amount = amount

    def _how_many(self, size: int) -> int:
        """How many of ``size`` entries (or channels) to prune; too many raises."""
        if isinstance(self.amount, numbers.Integral):
            if self.amount > size:
                raise ArgumentError(f"amount={self.amount} should be smaller than the number of "
                                    f"parameters to prune={size}")
            return int(self.amount)
        return round(self.amount * size)


class RandomUnstructured(_AmountMethod):
    """Prunes ``amount`` entries chosen uniformly at random (among the unpruned ones).

    Example:
        >>> prune.RandomUnstructured(amount=2).compute_mask(
        ...     ember.ones(5), ember.ones(5)).sum()
        tensor(3.)
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = self._how_many(t.numel())
        return _zero_at(default_mask, _smallest(ember.rand(t.numel()), k))

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float  # type: ignore[override]
              ) -> RandomUnstructured:
        """Prunes ``amount`` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_AmountMethod):
    """Prunes the ``amount`` entries of smallest absolute value (the earliest among equal
    ones).

    Example:
        >>> prune.L1Unstructured(amount=0.5).prune(ember.tensor([3., -1., 0.5, 2.]))
        tensor([3., -0., 0., 2.])
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = self._how_many(t.numel())
        return _zero_at(default_mask, _smallest(t.detach().abs().reshape(-1), k))

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> L1Unstructured:
        """Prunes the ``amount`` smallest entries of ``module.<name>`` (or of
        ``importance_scores``)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(_AmountMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random.

    Example:
        >>> mask = prune.RandomStructured(amount=1, dim=0).compute_mask(
        ...     ember.ones(3, 2), ember.ones(3, 2))
        >>> mask.sum(dim=1).tolist().count(0.0)
        1
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = _channels(t, self.dim)
        k = self._how_many(size)
        if k == 0:
            return default_mask
        return _keep_channels(t, self.dim, _smallest(ember.rand(size), size - k, largest=True),
                              default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> RandomStructured:
        """Prunes ``amount`` random channels of ``module.<name>`` along ``dim``."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_AmountMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm (``n`` as
    :func:`ember.norm`'s ``p``: a number, ``inf``, ``-inf``, ``"fro"`` or ``"nuc"``).

    Example:
        >>> w = ember.tensor([[1., 1.], [3., 0.], [0., 0.5]])
        >>> prune.LnStructured(amount=1, n=1, dim=0).prune(w)
        tensor([[1., 1.],
                [3., 0.],
                [0., 0.]])
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        super().__init__(amount)
        self.n, self.dim = n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = _channels(t, self.dim)
        k = self._how_many(size)
        dim = self.dim % t.ndim  # the norm first, so a bad n fails even when nothing is pruned
        try:
            norms = ember.norm(t.detach(), p=self.n, dim=[d for d in range(t.ndim) if d != dim])
        except (ArgumentError, ShapeError) as e:  # name the method, not linalg.matrix_norm
            raise type(e)(f"ln_structured: n={self.n!r} along dim={self.dim}: {e}") from None
        if k == 0:
            return default_mask
        return _keep_channels(t, self.dim, _smallest(norms, size - k, largest=True),
                              default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              n: int | float | str, dim: int, importance_scores: Tensor | None = None
              ) -> LnStructured:
        """Prunes the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest
        ``n``-norm (of ``importance_scores`` when given)."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given ``mask`` is zero.

    Example:
        >>> prune.CustomFromMask(ember.tensor([1., 0.])).prune(ember.tensor([5., 6.]))
        tensor([5., 0.])
    """

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"CustomFromMask: the mask has shape {self.mask.shape} but "
                                 f"the tensor's mask has shape {default_mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor  # type: ignore[override]
              ) -> CustomFromMask:
        """Prunes ``module.<name>`` where ``mask`` is zero."""
        return super().apply(module, name, mask=mask)


# -- helpers ---------------------------------------------------------------------------------
def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise ArgumentTypeError(f"Invalid type for amount: {amount!r}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ArgumentError(f"amount={amount} should either be a float in the range [0, 1] or a "
                            f"non-negative integer")


def _channels(t: Tensor, dim: int) -> int:
    """The number of channels of ``t`` along ``dim``; structured pruning needs 2+ dims."""
    if t.ndim <= 1:
        raise ArgumentError(f"Structured pruning can only be applied to multidimensional tensors. "
                            f"Found tensor of shape {t.shape} with {t.ndim} dims")
    if dim >= t.ndim:
        raise IndexOutOfRange(f"Invalid index {dim} for tensor of size {t.shape}")
    return t.shape[dim]


def _smallest(scores: Tensor, k: int, largest: bool = False) -> Tensor:
    """Indices of the ``k`` smallest (``largest``: largest) scores; ties go to the earliest."""
    order = ember.argsort(-scores if largest else scores, stable=True)
    return order[:k]


def _zero_at(default_mask: Tensor, flat_indices: Tensor) -> Tensor:
    mask = default_mask.clone().contiguous()
    if flat_indices.numel():
        mask.view(-1)[flat_indices] = 0
    return mask


def _keep_channels(t: Tensor, dim: int, kept: Tensor, default_mask: Tensor) -> Tensor:
    """A mask of ones on the ``kept`` channels along ``dim``, zeros elsewhere, times
    ``default_mask``."""
    keep = ember.zeros(t.shape[dim], dtype=default_mask.dtype, device=t.device)
    keep[kept] = 1
    shape = [1] * t.ndim
    shape[dim] = -1
    return default_mask * keep.reshape(shape)


# -- the functional interface ----------------------------------------------------------------
def identity(module: M, name: str) -> M:
    """Puts ``module.<name>`` under pruning with an all-ones mask.

    Example:
        >>> sorted(prune.identity(nn.Linear(2, 1), "weight").state_dict())
        ['bias', 'weight_mask', 'weight_orig']
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module: M, name: str, amount: int | float) -> M:
    """Prunes ``amount`` entries of ``module.<name>`` chosen at random.

    Example:
        >>> m = prune.random_unstructured(nn.Linear(4, 2), "weight", amount=3)
        >>> int((m.weight_mask == 0).sum())
        3
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: M, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> M:
    """Prunes the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` when given).

    Example:
        >>> m = nn.Linear(2, 1)
        >>> with ember.no_grad():
        ...     _ = m.weight.copy_(ember.tensor([[0.5, -2.0]]))
        >>> prune.l1_unstructured(m, "weight", amount=0.5).weight
        tensor([[ 0., -2.]], grad_fn=<MulBackward0>)
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: M, name: str, amount: int | float, dim: int) -> M:
    """Prunes ``amount`` random channels of ``module.<name>`` along ``dim``.

    Example:
        >>> m = prune.random_structured(nn.Linear(3, 4), "weight", amount=2, dim=0)
        >>> int((m.weight_mask.sum(dim=1) == 0).sum())
        2
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: M, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> M:
    """Prunes the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest
    ``n``-norm (of ``importance_scores`` when given).

    Example:
        >>> m = prune.ln_structured(nn.Conv2d(1, 4, 3), "weight", amount=0.5, n=2, dim=0)
        >>> int((m.weight_mask.sum(dim=(1, 2, 3)) == 0).sum())
        2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type,
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prunes the ``(module, name)`` tensors of ``parameters`` together, as if they were one
    flat vector: ``pruning_method(**kwargs)`` (an unstructured method, e.g.
    :class:`L1Unstructured` with ``amount``) ranks all their entries at once.

    Example:
        >>> a, b = nn.Linear(4, 4), nn.Linear(4, 1)
        >>> prune.global_unstructured([(a, "weight"), (b, "weight")],
        ...                           pruning_method=prune.L1Unstructured, amount=10)
        >>> int((a.weight_mask == 0).sum() + (b.weight_mask == 0).sum())
        10
    """
    if not isinstance(parameters, Iterable):
        raise ArgumentTypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    for entry in parameters:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise ArgumentTypeError("global_unstructured(): parameters must hold (module, name) "
                                    f"pairs, got {type_name(entry)}")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise ArgumentTypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask") if hasattr(m, n + "_mask")
                                         else ember.ones_like(getattr(m, n))
                                         for m, n in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise ArgumentTypeError('Only "unstructured" PRUNING_TYPE supported for the '
                                f"`pruning_method`. Found method {pruning_method} of type "
                                f"{method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    final = container.compute_mask(scores, default_mask)
    start = 0
    for m, n in parameters:
        param = getattr(m, n)
        custom_from_mask(m, n, mask=final[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module: M, name: str, mask: Tensor) -> M:
    """Prunes ``module.<name>`` where ``mask`` is zero.

    Example:
        >>> m = prune.custom_from_mask(nn.Linear(2, 1), "weight", ember.tensor([[0., 1.]]))
        >>> m.weight_mask
        tensor([[0., 1.]])
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: M, name: str) -> M:
    """Makes the pruning of ``module.<name>`` permanent: ``name`` becomes a parameter holding
    the pruned values; ``name_orig``, ``name_mask`` and the hook go.

    Example:
        >>> m = prune.remove(prune.l1_unstructured(nn.Linear(2, 1), "weight", 1), "weight")
        >>> sorted(m.state_dict())
        ['bias', 'weight']
    """
    for key, hook in _hooks_of(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[key]
        return module
    raise ArgumentError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                        f"can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any module inside it has a pruning hook.

    Example:
        >>> net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        >>> prune.is_pruned(net), prune.is_pruned(prune.identity(net[0], "bias"))
        (False, True)
    """
    return any(_hooks_of(m) for m in module.modules())
