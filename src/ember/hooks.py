"""Hook handles, public as ``ember.utils.hooks`` (PyTorch's ``torch.utils.hooks``).

Every registration in Ember (tensor, autograd node, module and optimizer hooks) returns a
:class:`RemovableHandle`. Ember keeps tensor, node and optimizer hooks in ordered lists, which
a handle made by :meth:`RemovableHandle.for_entry` removes its one entry from; a handle made as
PyTorch makes one, ``RemovableHandle(hooks_dict)``, removes the key ``handle.id`` from that
dict (and from each ``extra_dict``): module hooks are kept so, in PyTorch's dicts
(:mod:`ember.nn.module_hooks`), and registries written against PyTorch's API work unchanged.

This module sits beside the core (``ember.tensor`` imports it); of Ember it imports only the
``STRUCTURE`` counter that every registration and removal moves.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, TypeVar

from ember.version_counter import STRUCTURE

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]  # (and add_hook)

_F = TypeVar("_F", bound=Callable)
_ids = itertools.count()  # handle ids: unique in the process, as PyTorch's


class RemovableHandle:
    """A registration that ``remove()`` undoes (any number of times); also a context
    manager that removes it on exit.

    Args:
        hooks_dict: a dict of hooks keyed by handle ``id``: ``remove()`` deletes
            ``hooks_dict[self.id]`` if it is still there.
        extra_dict: a dict, or a list of dicts, whose ``self.id`` key ``remove()`` deletes
            too.

    Unlike PyTorch's, a handle holds its dicts strongly (Ember's hook lists cannot be
    weakly referenced); the dicts' owner keeps them alive anyway.

    Example:
        >>> hooks = {}
        >>> handle = ember.utils.hooks.RemovableHandle(hooks)
        >>> hooks[handle.id] = print
        >>> with handle:
        ...     len(hooks)
        1
        >>> len(hooks)
        0
    """

    __slots__ = ("id", "_hooks", "_entry", "_extra")

    def __init__(self, hooks_dict: MutableMapping, *,
                 extra_dict: MutableMapping | list[MutableMapping] | None = None) -> None:
        self.id = next(_ids)
        self._hooks: MutableMapping | list = hooks_dict
        self._entry: Any = self.id
        self._extra: tuple[MutableMapping, ...] = (
            () if extra_dict is None else tuple(extra_dict) if isinstance(extra_dict, list)
            else (extra_dict,))

    @classmethod
    def for_entry(cls, hooks: list, hook: Any) -> RemovableHandle:
        """The handle of ``hook`` in Ember's ordered list ``hooks`` (an identity match, so it
        removes exactly this registration even when the same function is registered twice)."""
        handle = cls.__new__(cls)
        handle.id, handle._hooks, handle._entry, handle._extra = next(_ids), hooks, hook, ()
        return handle

    def remove(self) -> None:
        """Unregisters the hook; a second call does nothing."""
        hooks = self._hooks
        if isinstance(hooks, list):
            for i, entry in enumerate(hooks):
                if entry is self._entry:
                    del hooks[i]
                    # done: a second remove() must not take a twin entry, and the handle no
                    # longer keeps the hook (and what its closure holds) alive, as PyTorch's
                    self._hooks, self._entry = {}, None
                    _note_structure_change()
                    break
        elif self.id in hooks:
            del hooks[self.id]
            _note_structure_change()
        for extra in self._extra:
            extra.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"


def add_hook(hooks: list, hook: Any) -> RemovableHandle:
    """Appends ``hook`` to Ember's ordered list ``hooks`` (a tensor's, an autograd node's or
    an optimizer's) and returns its handle; the registration counts in ``STRUCTURE``
    (``ember.jit`` notices)."""
    hooks.append(hook)
    STRUCTURE.value += 1
    return RemovableHandle.for_entry(hooks, hook)


def ids_taken(ids: Iterable[Any]) -> None:
    """Makes later handle ids greater than every int in ``ids``: the keys of hooks unpickled
    from another process, which this process's counter may not have passed yet (a new
    registration would otherwise replace such a hook under the same key)."""
    global _ids
    following = max((i for i in ids if isinstance(i, int)), default=-1) + 1
    mine = next(_ids)
    _ids = itertools.count(max(mine, following))


def _note_structure_change() -> None:
    """Tells ``ember.jit`` that a hook went (compiled functions look again at what they
    reach)."""
    STRUCTURE.value += 1


def unserializable_hook(f: _F) -> _F:
    """Marks ``f`` as a hook that is not expected to survive pickling, which silences
    :func:`warn_if_has_hooks` for it; returns ``f``.

    Example:
        >>> @ember.utils.hooks.unserializable_hook
        ... def double(grad):
        ...     return grad * 2
        >>> x = ember.ones(1, requires_grad=True)
        >>> _ = x.register_hook(double)
        >>> ember.utils.hooks.warn_if_has_hooks(x)  # (no warning)
    """
    f.__ember_unserializable__ = True  # type: ignore[attr-defined]
    return f


def warn_if_has_hooks(tensor: Any) -> None:
    """Warns (``UserWarning``) once per gradient hook of ``tensor`` that pickling it will
    drop, unless the hook is marked with :func:`unserializable_hook`. Pickling a tensor
    calls it, as PyTorch's does.

    Example:
        >>> import warnings
        >>> x = ember.ones(1, requires_grad=True)
        >>> _ = x.register_hook(lambda g: g)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     ember.utils.hooks.warn_if_has_hooks(x)
        >>> "will not be serialized" in str(caught[0].message)
        True
    """
    for hook in tensor_hooks(tensor):
        if not getattr(hook, "__ember_unserializable__", False):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized. If this is "
                          "expected, decorate the function with "
                          "@ember.utils.hooks.unserializable_hook to silence this warning",
                          UserWarning, stacklevel=2)


def tensor_hooks(tensor: Any) -> list:
    """The gradient hooks registered on ``tensor`` with ``register_hook``: a leaf keeps them
    itself, a result of an op on the node that made it."""
    if tensor._node is None:
        return list(tensor._hooks or ())
    return list((getattr(tensor._node, "hooks", None) or {}).get(tensor._idx, ()))
