"""``torch.nn.modules``' paths, for code that imports layers and their bases from there
(``from ember.nn.modules.batchnorm import _BatchNorm``, ``…loss import _Loss``,
``…utils import _pair``): each submodule holds the names of the Ember modules that define
those classes (``batchnorm`` those of :mod:`ember.nn.normalization`, ``sync_batch_norm`` and
``lazy``), and the package itself holds every layer, as ``torch.nn.modules`` does.

Example:
    >>> from ember.nn.modules.loss import _Loss
    >>> isinstance(ember.nn.MSELoss(), _Loss)
    True
"""

import sys
from importlib import import_module
from types import ModuleType

from ember.nn import __all__ as _layers

_WHERE = {  # torch.nn.modules' submodule → the Ember modules that define its classes
    "activation": ("activation", "multihead_attention"), "adaptive": ("adaptive",),
    "batchnorm": ("normalization", "sync_batch_norm", "lazy"), "channelshuffle": ("shuffle",),
    "container": ("containers",), "conv": ("conv", "lazy"), "distance": ("distance",),
    "dropout": ("dropout",), "flatten": ("flatten",), "fold": ("fold",),
    "instancenorm": ("normalization", "lazy"), "lazy": ("lazy",), "linear": ("linear", "lazy"),
    "loss": ("loss", "linear_cross_entropy"), "module": ("module", "module_hooks", "state_dict"),
    "normalization": ("normalization",), "padding": ("padding",), "pixelshuffle": ("shuffle",),
    "pooling": ("pooling",), "rnn": ("rnn",), "sparse": ("sparse",),
    "transformer": ("transformer",), "upsampling": ("upsampling",),
}


def _submodule(name: str, sources: tuple[str, ...]) -> ModuleType:
    """The Ember module itself for one source, else a module holding the sources' names."""
    modules = [import_module(f"ember.nn.{source}") for source in sources]
    if len(modules) == 1:
        return modules[0]
    merged = ModuleType(f"{__name__}.{name}", f"torch.nn.modules.{name}'s names, from "
                        + ", ".join(m.__name__ for m in modules))
    for m in modules:
        vars(merged).update({k: v for k, v in vars(m).items() if not k.startswith("__")})
    return merged


for _name, _sources in _WHERE.items():
    globals()[_name] = sys.modules[f"{__name__}.{_name}"] = _submodule(_name, _sources)

from ember.nn.modules import utils  # noqa: E402

_nn = import_module("ember.nn")
__all__ = [name for name in _layers if isinstance(getattr(_nn, name), type)]
globals().update({name: getattr(_nn, name) for name in __all__})
