"""The fuser methods ``fuse_modules`` calls (``torch.ao.quantization.fuser_method_mappings``):
each takes ``is_qat`` and the modules to fuse, and returns the fused module: a batch norm folded
into the layer before it (eval mode) or, for quantization-aware training, kept beside a
convolution (``ConvBn*d``, ``ConvBnReLU*d``; PyTorch's ``LinearBn1d`` is not provided)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember import nn
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.module import Module
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ember.quant.modules import intrinsic as nni

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn",
           "get_fuser_method", "DEFAULT_OP_LIST_TO_FUSER_METHOD"]

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_CONV_RELUS = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d, nn.Conv3d: nni.ConvReLU3d}
_CONV_BNS = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d, nn.Conv3d: nni.ConvBn3d}
_CONV_BN_RELUS = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d,
                  nn.Conv3d: nni.ConvBnReLU3d}


def _check_pair(what: str, layer: Module, bn: Module, is_qat: bool, qat_name: str) -> None:
    if layer.training != bn.training:
        raise ArgumentError(f"{what}: {type(layer).__name__} and {type(bn).__name__} both must be "
                            "in the same mode (train or eval).")
    if is_qat and qat_name.startswith("ConvBn"):
        _check_qat_bn(what, layer, bn)
        return
    if is_qat:
        raise NotImplementedError(f"{what}: fusing a batch norm for quantization-aware training "
                                  f"(PyTorch's {qat_name}) is not supported in Ember; fuse in "
                                  "eval mode, which folds the batch norm into the layer")
    if bn.training:
        raise NotImplementedError(f"{what}: {type(layer).__name__} and {type(bn).__name__} are "
                                  "in training mode; Ember folds batch norms in eval mode only: "
                                  "call .eval() on both first")


def _check_qat_bn(what: str, conv: Module, bn: Module) -> None:
    bn_name = type(bn).__name__
    if bn.num_features != conv.out_channels:
        raise ArgumentError(f"{what}: the {bn_name}'s num_features ({bn.num_features}) must be "
                            f"the {type(conv).__name__}'s out_channels ({conv.out_channels})")
    if not bn.affine or not bn.track_running_stats:
        raise ArgumentError(f"{what}: fusing for quantization-aware training needs a {bn_name} "
                            "with affine=True and track_running_stats=True (as PyTorch)")


def _check_conv(what: str, conv: Module, types: tuple[type, ...]) -> None:
    if type(conv) not in types:
        raise ArgumentTypeError(f"{what}: expected one of {[t.__name__ for t in types]}, got "
                                f"{type(conv).__name__}")


def fuse_conv_bn(is_qat: bool, conv: Module, bn: Module) -> Module:
    """``conv`` with the eval-mode batch norm ``bn`` folded into its weight and bias, or (for
    quantization-aware training, ``is_qat``) both as one ``ConvBn1d/2d/3d``.

    Example:
        >>> conv, bn = nn.Conv2d(1, 2, 3).eval(), nn.BatchNorm2d(2).eval()
        >>> type(fuse_conv_bn(False, conv, bn)).__name__
        'Conv2d'
    """
    _check_conv("fuse_conv_bn", conv, _CONVS)
    _check_pair("fuse_conv_bn", conv, bn, is_qat, f"ConvBn{type(conv).__name__[4:]}")
    return _CONV_BNS[type(conv)](conv, bn) if is_qat else fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat: bool, conv: Module, bn: Module, relu: Module) -> Module:
    """:func:`fuse_conv_bn` followed by ``relu``, as one ``ConvReLU1d/2d/3d`` (for
    quantization-aware training, ``is_qat``: ``ConvBnReLU1d/2d/3d``).

    Example:
        >>> conv, bn = nn.Conv1d(1, 2, 3).eval(), nn.BatchNorm1d(2).eval()
        >>> type(fuse_conv_bn_relu(False, conv, bn, nn.ReLU())).__name__
        'ConvReLU1d'
    """
    _check_conv("fuse_conv_bn_relu", conv, _CONVS)
    _check_pair("fuse_conv_bn_relu", conv, bn, is_qat, f"ConvBnReLU{type(conv).__name__[4:]}")
    if is_qat:
        return _CONV_BN_RELUS[type(conv)](conv, bn, relu)
    return _CONV_RELUS[type(conv)](fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat: bool, linear: Module, bn: Module) -> Module:
    """``linear`` with the eval-mode ``BatchNorm1d`` ``bn`` folded in.

    Example:
        >>> lin, bn = nn.Linear(3, 2).eval(), nn.BatchNorm1d(2).eval()
        >>> type(fuse_linear_bn(False, lin, bn)).__name__
        'Linear'
    """
    _check_pair("fuse_linear_bn", linear, bn, is_qat, "LinearBn1d")
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat: bool, convt: Module, bn: Module) -> Module:
    """``convt`` (a ``ConvTranspose1d/2d/3d``) with the eval-mode batch norm ``bn`` folded in
    (its weights' output channels are their second dimension).

    Example:
        >>> convt, bn = nn.ConvTranspose2d(1, 2, 3).eval(), nn.BatchNorm2d(2).eval()
        >>> type(fuse_convtranspose_bn(False, convt, bn)).__name__
        'ConvTranspose2d'
    """
    _check_conv("fuse_convtranspose_bn", convt,
                (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d))
    if is_qat:
        raise NotImplementedError("fuse_convtranspose_bn: Fusing ConvTranspose+BatchNorm not yet "
                                  "supported in QAT (as in PyTorch); fuse in eval mode")
    _check_pair("fuse_convtranspose_bn", convt, bn, is_qat, "")
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _linear_relu(is_qat: bool, linear: Module, relu: Module) -> Module:
    return nni.LinearReLU(linear, relu)


def _conv_relu(is_qat: bool, conv: Module, relu: Module) -> Module:
    return _CONV_RELUS[type(conv)](conv, relu)


def _bn_relu(is_qat: bool, bn: Module, relu: Module) -> Module:
    return {nn.BatchNorm2d: nni.BNReLU2d, nn.BatchNorm3d: nni.BNReLU3d}[type(bn)](bn, relu)


DEFAULT_OP_LIST_TO_FUSER_METHOD: dict[tuple[type, ...], Callable[..., Module]] = {
    (nn.Linear, nn.ReLU): _linear_relu,
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.BatchNorm2d, nn.ReLU): _bn_relu,
    (nn.BatchNorm3d, nn.ReLU): _bn_relu,
}
for _n, _conv, _bn, _convt in ((1, nn.Conv1d, nn.BatchNorm1d, nn.ConvTranspose1d),
                               (2, nn.Conv2d, nn.BatchNorm2d, nn.ConvTranspose2d),
                               (3, nn.Conv3d, nn.BatchNorm3d, nn.ConvTranspose3d)):
    DEFAULT_OP_LIST_TO_FUSER_METHOD[_conv, _bn] = fuse_conv_bn
    DEFAULT_OP_LIST_TO_FUSER_METHOD[_conv, _bn, nn.ReLU] = fuse_conv_bn_relu
    DEFAULT_OP_LIST_TO_FUSER_METHOD[_conv, nn.ReLU] = _conv_relu
    DEFAULT_OP_LIST_TO_FUSER_METHOD[_convt, _bn] = fuse_convtranspose_bn


def get_fuser_method(op_list: Sequence[type],
                     additional_fuser_method_mapping: dict | None = None) -> Callable[..., Module]:
    """The fuser method for the module types ``op_list`` (a tuple of types).

    Example:
        >>> get_fuser_method((nn.Conv2d, nn.BatchNorm2d)).__name__
        'fuse_conv_bn'
    """
    fusers = {**DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    op_list = tuple(op_list)
    if op_list not in fusers:
        raise NotImplementedError(
            f"Cannot fuse modules: {tuple(t.__name__ for t in op_list)} (no fuser method); "
            "Ember fuses "
            "(ConvNd, BatchNormNd[, ReLU]), (ConvNd, ReLU), (ConvTransposeNd, BatchNormNd) for "
            "N = 1, 2, 3, (BatchNormNd, ReLU) for N = 2, 3, (Linear, ReLU) and "
            "(Linear, BatchNorm1d)")
    return fusers[op_list]
