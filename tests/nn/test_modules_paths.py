"""``ember.nn.modules`` answers the import paths of ``torch.nn.modules`` with the same classes,
and the private bases carry PyTorch's names and hierarchy."""

import importlib

import pytest
import torch

import ember
from ember.nn.modules import _WHERE


@pytest.mark.parametrize("sub", sorted(_WHERE))
def test_every_layer_of_a_torch_submodule_is_there(sub):
    theirs = importlib.import_module(f"torch.nn.modules.{sub}")
    ours = importlib.import_module(f"ember.nn.modules.{sub}")
    layers = [n for n, v in vars(theirs).items() if isinstance(v, type) and
              v.__module__ == theirs.__name__ and hasattr(ember.nn, n)]
    assert all(getattr(ours, n) is getattr(ember.nn, n) for n in layers)


def test_private_bases_under_torchs_names():
    from ember.nn.modules.batchnorm import _BatchNorm, _NormBase
    from ember.nn.modules.conv import _ConvNd, _ConvTransposeNd
    from ember.nn.modules.dropout import _DropoutNd
    from ember.nn.modules.instancenorm import _InstanceNorm
    from ember.nn.modules.loss import _Loss, _WeightedLoss
    from ember.nn.modules.pooling import (
        _AdaptiveAvgPoolNd,
        _AdaptiveMaxPoolNd,
        _AvgPoolNd,
        _LPPoolNd,
        _MaxPoolNd,
        _MaxUnpoolNd,
    )

    bases = {"_BatchNorm": _BatchNorm, "_NormBase": _NormBase, "_ConvNd": _ConvNd,
             "_ConvTransposeNd": _ConvTransposeNd, "_DropoutNd": _DropoutNd,
             "_InstanceNorm": _InstanceNorm, "_Loss": _Loss, "_WeightedLoss": _WeightedLoss,
             "_AdaptiveAvgPoolNd": _AdaptiveAvgPoolNd, "_AdaptiveMaxPoolNd": _AdaptiveMaxPoolNd,
             "_AvgPoolNd": _AvgPoolNd, "_LPPoolNd": _LPPoolNd, "_MaxPoolNd": _MaxPoolNd,
             "_MaxUnpoolNd": _MaxUnpoolNd}
    for name in ("BatchNorm2d", "SyncBatchNorm", "InstanceNorm1d", "Conv2d", "ConvTranspose3d",
                 "Dropout", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout", "MSELoss",
                 "CrossEntropyLoss", "NLLLoss", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
                 "AvgPool3d", "LPPool2d", "MaxPool1d", "MaxUnpool2d", "Dropout3d"):
        ours, theirs = getattr(ember.nn, name), getattr(torch.nn, name)
        for base, cls in bases.items():
            torch_base = next((c for c in theirs.__mro__ if c.__name__ == base), None)
            assert issubclass(ours, cls) == (torch_base is not None), (name, base)
    # as in PyTorch, Dropout2d is not a Dropout
    assert not isinstance(ember.nn.Dropout2d(), ember.nn.Dropout)


def test_argument_helpers_match_torch():
    from torch.nn.modules import utils as theirs

    from ember.nn.modules import utils as ours
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for value in (3, (1, 2), [4]):
            assert getattr(ours, name)(value) == getattr(theirs, name)(value)
    assert ours._reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)
    assert ours._list_with_default([None, 3], [7, 8, 9]) == \
        theirs._list_with_default([None, 3], [7, 8, 9])


def test_a_wrapped_models_checkpoint_loads_into_the_bare_model():
    from ember.nn.modules.utils import consume_prefix_in_state_dict_if_present

    model = ember.nn.Sequential(ember.nn.Linear(2, 2))
    state = ember.nn.DataParallel(model).state_dict()
    assert all(k.startswith("module.") for k in state)
    consume_prefix_in_state_dict_if_present(state, "module.")
    model.load_state_dict(state)
    assert sorted(state) == ["0.bias", "0.weight"]


def test_padding_bases_under_torchs_names():
    from ember.nn.modules.padding import _CircularPadNd, _ReflectionPadNd, _ReplicationPadNd

    for base, kind in ((_ReflectionPadNd, "Reflection"), (_ReplicationPadNd, "Replication"),
                       (_CircularPadNd, "Circular")):
        for n in (1, 2, 3):
            assert isinstance(getattr(ember.nn, f"{kind}Pad{n}d")(1), base)
    assert not isinstance(ember.nn.ZeroPad2d(1), _ReflectionPadNd)


def test_torchs_leftover_module_names():
    from ember.nn.modules.batchnorm import _LazyNormBase
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear

    for name in ("LazyBatchNorm1d", "LazyInstanceNorm3d"):
        assert issubclass(getattr(ember.nn, name), _LazyNormBase)
        assert issubclass(getattr(torch.nn, name), torch.nn.modules.batchnorm._LazyNormBase)
    for lib in (ember, torch):
        out_proj = lib.nn.MultiheadAttention(4, 2).out_proj
        assert type(out_proj).__name__ == "NonDynamicallyQuantizableLinear"
        assert isinstance(out_proj, lib.nn.Linear)
    assert issubclass(NonDynamicallyQuantizableLinear, ember.nn.Linear)
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
            box = lib.nn.Container(fc=lib.nn.Linear(2, 3))
        assert isinstance(box, lib.nn.Module) and list(box.state_dict()) == ["fc.weight",
                                                                             "fc.bias"]
    assert ember.nn.modules.Container is ember.nn.Container
    assert ember.nn.modules.container.Container is ember.nn.Container
