"""Saving and restoring what the observers of a prepared model have seen (PyTorch's
``get_observer_state_dict`` and ``load_observer_state_dict``): calibrate once, save the
ranges, prepare the same model again elsewhere and load them instead of calibrating."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.quant.fake_quantize import FakeQuantizeBase
from ember.quant.observer import ObserverBase

__all__ = ["get_observer_state_dict", "load_observer_state_dict"]

# (what watches activations; torch.ao.quantization's name, not its .observer's)
ObserverOrFakeQuantize = ObserverBase | FakeQuantizeBase


def get_observer_state_dict(mod: Module) -> OrderedDict:
    """The entries of ``mod.state_dict()`` that belong to observers and fake quantizers
    (keys containing ``activation_post_process``).

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> list(get_observer_state_dict(prepare(m.eval())))[:2]
        ['0.activation_post_process.eps', '0.activation_post_process.min_val']
    """
    return OrderedDict((k, v) for k, v in mod.state_dict().items()
                       if "activation_post_process" in k)


def load_observer_state_dict(mod: Module, obs_dict: Any) -> None:
    """Loads the observer and fake-quantizer entries of ``obs_dict`` (what
    :func:`get_observer_state_dict` returned) into ``mod``'s observers and fake quantizers,
    leaving the other modules alone; keys for observers ``mod`` does not have are ignored, as
    in PyTorch. Raises naming the ``activation_post_process`` keys ``obs_dict`` lacks
    (PyTorch means to, but its non-strict loading never reports them, and leaves those
    observers as they were).

    Example:
        >>> m = nn.Sequential(QuantStub(), nn.Linear(2, 2), DeQuantStub())
        >>> m.qconfig = default_qconfig
        >>> a, b = prepare(m.eval()), prepare(m.eval())
        >>> _ = a(ember.tensor([[-1.0, 3.0]]))
        >>> load_observer_state_dict(b, get_observer_state_dict(a))
        >>> b[1].activation_post_process.max_val == a[1].activation_post_process.max_val
        tensor(True)
    """
    missing: list[str] = []
    errors: list[str] = []
    for name, module in mod.named_modules():
        if isinstance(module, ObserverOrFakeQuantize):
            module._load_from_state_dict(obs_dict, name + ".", {}, False, missing, [], errors)
    missing = [k for k in missing if "activation_post_process" in k]
    if missing or errors:
        raise ArgumentError("load_observer_state_dict: "
                            + (f"missing keys for observers: {missing}" if missing else "")
                            + ("; " if missing and errors else "") + "; ".join(errors)
                            + ". Hint: prepare the model with the same qconfigs as the one the "
                            "state dict came from")
