"""``ember.utils.hooks``: PyTorch's ``torch.utils.hooks`` — the :class:`RemovableHandle` every
hook registration returns, :func:`unserializable_hook` and :func:`warn_if_has_hooks` (defined
in :mod:`ember.hooks`, beside the core that uses them).

PyTorch's ``BackwardHook`` is left out: it is the machinery of PyTorch's module backward
hooks, which Ember builds differently (:mod:`ember.nn.backward_hooks`), and it is not meant
to be called by users.
"""

from ember.hooks import RemovableHandle, unserializable_hook, warn_if_has_hooks

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]
