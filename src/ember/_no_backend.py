"""The functions of a ``torch.<accelerator>`` namespace (``ember.mps``, ``ember.xpu``) for a
device type this build has no backend for: each that needs the device raises, as PyTorch's
do on a machine without it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from ember.backend.device import no_backend_error


def needs_device(type: str, name: str) -> Callable[..., NoReturn]:
    """``ember.<type>.<name>``: a function that raises
    :class:`~ember.backend.DeviceUnavailableError`, naming itself."""
    def unavailable(*args: Any, **kwargs: Any) -> NoReturn:
        raise no_backend_error(type, f"ember.{type}.{name}")
    unavailable.__name__ = unavailable.__qualname__ = name
    unavailable.__doc__ = (f"As ``torch.{type}.{name}`` without a {type} device: an error "
                           f"(this build has no {type} backend).")
    return unavailable
