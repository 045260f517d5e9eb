"""``ember.nn.functional``: the stateless neural-network ops under PyTorch's names, so that
``import ember.nn.functional as F`` ports ``torch.nn.functional`` code.

This module only gathers names; each op lives with its family under :mod:`ember.ops`.

Example:
    >>> import ember.nn.functional as F
    >>> F.relu(ember.tensor([-1.0, 2.0]))
    tensor([0., 2.])
"""

from ember.ops.activations import *  # noqa: F403
from ember.ops.activations import __all__ as _activations
from ember.ops.adaptive_avg_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
)
from ember.ops.attention import scaled_dot_product_attention
from ember.ops.binary_loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    gaussian_nll_loss,
    kl_div,
    poisson_nll_loss,
)
from ember.ops.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from ember.ops.ctc_loss import ctc_loss
from ember.ops.distance import cosine_similarity, pairwise_distance, pdist
from ember.ops.dropout import (
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ember.ops.embedding import embedding, embedding_bag
from ember.ops.fractional_pool import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from ember.ops.gather import one_hot
from ember.ops.grid_sample import affine_grid, grid_sample
from ember.ops.group_norm import group_norm
from ember.ops.gumbel_softmax import gumbel_softmax
from ember.ops.im2col import fold, unfold
from ember.ops.interpolate import interpolate, upsample, upsample_bilinear, upsample_nearest
from ember.ops.layer_norm import layer_norm
from ember.ops.linear import bilinear, linear
from ember.ops.linear_cross_entropy import linear_cross_entropy
from ember.ops.local_response_norm import local_response_norm
from ember.ops.loss import (
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from ember.ops.lp_pool import lp_pool1d, lp_pool2d, lp_pool3d
from ember.ops.margin_loss import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ember.ops.multi_head_attention import multi_head_attention_forward
from ember.ops.native_functions import conv_tbc
from ember.ops.normalization import (
    batch_norm,
    instance_norm,
    normalize,
    rms_norm,
)
from ember.ops.pad import pad
from ember.ops.pixel_shuffle import (
    channel_shuffle,
    native_channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
)
from ember.ops.pool import (
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
)
from ember.ops.softmax import log_softmax, softmax, softmin
from ember.ops.unary import sigmoid, tanh
from ember.ops.unpool import max_unpool1d, max_unpool2d, max_unpool3d

__all__ = [*_activations, "sigmoid", "tanh", "softmax", "log_softmax", "softmin",
           "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "linear", "bilinear", "conv_tbc",
           "linear_cross_entropy",
           "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "layer_norm", "rms_norm", "batch_norm", "instance_norm", "group_norm", "normalize",
           "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot", "pad",
           "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
           "scaled_dot_product_attention", "cosine_similarity", "pairwise_distance",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "grid_sample", "affine_grid",
           "channel_shuffle", "pdist", "embedding_bag", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss", "alpha_dropout",
           "feature_alpha_dropout", "gumbel_softmax", "local_response_norm", "upsample_bilinear",
           "upsample_nearest", "native_channel_shuffle", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices", "multi_head_attention_forward"]
