"""Neural networks: ``ember.nn.functional`` (stateless ops under PyTorch's names), ``Module``
and ``Parameter``, containers, layers, losses, ``init`` and ``utils``, as in ``torch.nn``.

Example:
    >>> import ember.nn as nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> net(ember.randn(3, 4)).shape
    ember.Size([3, 2])
"""

from ember.nn import functional, init, utils
from ember.nn.activation import *  # noqa: F403
from ember.nn.activation import __all__ as _activation
from ember.nn.adaptive import AdaptiveLogSoftmaxWithLoss
from ember.nn.containers import (
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from ember.nn.conv import *  # noqa: F403
from ember.nn.conv import __all__ as _conv
from ember.nn.data_parallel import DataParallel
from ember.nn.distance import CosineSimilarity, PairwiseDistance
from ember.nn.dropout import *  # noqa: F403
from ember.nn.dropout import __all__ as _dropout
from ember.nn.flatten import Flatten, Unflatten
from ember.nn.fold import Fold, Unfold
from ember.nn.lazy import *  # noqa: F403
from ember.nn.lazy import __all__ as _lazy
from ember.nn.linear import Bilinear, Identity, Linear
from ember.nn.linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from ember.nn.loss import *  # noqa: F403
from ember.nn.loss import __all__ as _loss
from ember.nn.module import Module
from ember.nn.module_hooks import (
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from ember.nn.multihead_attention import MultiheadAttention
from ember.nn.normalization import *  # noqa: F403
from ember.nn.normalization import __all__ as _normalization
from ember.nn.padding import *  # noqa: F403
from ember.nn.padding import __all__ as _padding
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer
from ember.nn.pooling import *  # noqa: F403
from ember.nn.pooling import __all__ as _pooling
from ember.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from ember.nn.shuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from ember.nn.sparse import Embedding, EmbeddingBag
from ember.nn.sync_batch_norm import SyncBatchNorm
from ember.nn.transformer import *  # noqa: F403
from ember.nn.transformer import __all__ as _transformer
from ember.nn.upsampling import *  # noqa: F403
from ember.nn.upsampling import __all__ as _upsampling

__all__ = ["functional", "init", "utils", "Parameter", "Buffer",
           "UninitializedBuffer", "Module", "Container", "Sequential", "DataParallel",
           "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Linear",
           "Bilinear", "Flatten", "Unflatten", "Embedding", "EmbeddingBag", "Fold", "Unfold",
           "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", *_activation, *_conv, *_dropout,
           *_lazy, *_loss, *_normalization, *_padding, *_pooling, *_upsampling,
           "MultiheadAttention", *_transformer, "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase",
           "RNNCell", "LSTMCell", "GRUCell", "CosineSimilarity", "PairwiseDistance",
           "AdaptiveLogSoftmaxWithLoss", "SyncBatchNorm", "LinearCrossEntropyLoss",
           "LinearCrossEntropyOptions", "register_module_forward_hook",
           "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

# torch.nn.modules' paths (it reads __all__); torch.nn.attention, reachable after `import ember`
from ember.nn import attention, modules  # noqa: E402
