"""Ember's ops: the primitive registry and the functional API over it, one file per family.

Importing this package registers every primitive and binds every Tensor method.
"""

from importlib import import_module

from ember.ops.activations import *  # noqa: F403
from ember.ops.adaptive_avg_pool import *  # noqa: F403
from ember.ops.arithmetic import *  # noqa: F403
from ember.ops.attention import *  # noqa: F403
from ember.ops.batch_norm_sync import *  # noqa: F403
from ember.ops.broadcast import *  # noqa: F403
from ember.ops.compare import *  # noqa: F403
from ember.ops.complex_math import *  # noqa: F403
from ember.ops.complex_parts import *  # noqa: F403
from ember.ops.construct import *  # noqa: F403
from ember.ops.constructors import *  # noqa: F403
from ember.ops.conv import *  # noqa: F403
from ember.ops.convert import *  # noqa: F403
from ember.ops.copy_variants import *  # noqa: F403
from ember.ops.creation import *  # noqa: F403
from ember.ops.ctc_loss import *  # noqa: F403
from ember.ops.diagonal import *  # noqa: F403
from ember.ops.discrete import *  # noqa: F403
from ember.ops.distance import *  # noqa: F403
from ember.ops.dlpack import *  # noqa: F403
from ember.ops.dropout import *  # noqa: F403
from ember.ops.embedding import *  # noqa: F403
from ember.ops.embedding_bag_native import *  # noqa: F403
from ember.ops.fake_quantize import *  # noqa: F403
from ember.ops.fake_quantize_learnable import *  # noqa: F403
from ember.ops.fft import FFTC2C  # noqa: F401 - registers the FFT primitives (ember.fft's)
from ember.ops.fill import *  # noqa: F403
from ember.ops.foreach import *  # noqa: F403
from ember.ops.frexp import *  # noqa: F403
from ember.ops.from_file import *  # noqa: F403
from ember.ops.functional_aliases import *  # noqa: F403
from ember.ops.fused_arithmetic import *  # noqa: F403
from ember.ops.gamma import *  # noqa: F403
from ember.ops.gather import *  # noqa: F403
from ember.ops.gradient import *  # noqa: F403
from ember.ops.grid_sample import *  # noqa: F403
from ember.ops.group_norm import *  # noqa: F403
from ember.ops.gumbel_softmax import *  # noqa: F403
from ember.ops.hash_tensor import *  # noqa: F403
from ember.ops.histogram import *  # noqa: F403
from ember.ops.igamma import *  # noqa: F403
from ember.ops.im2col import *  # noqa: F403
from ember.ops.indexing import *  # noqa: F403
from ember.ops.inplace_functions import *  # noqa: F403
from ember.ops.integrate import *  # noqa: F403
from ember.ops.interpolate import *  # noqa: F403
from ember.ops.join import *  # noqa: F403
from ember.ops.layer_norm import *  # noqa: F403
from ember.ops.legacy_tensor_types import *  # noqa: F403
from ember.ops.linalg import *  # noqa: F403
from ember.ops.linalg_composite import *  # noqa: F403
from ember.ops.linalg_decomp import *  # noqa: F403
from ember.ops.linalg_det import *  # noqa: F403
from ember.ops.linalg_ldl import *  # noqa: F403
from ember.ops.linalg_legacy import *  # noqa: F403
from ember.ops.linalg_lu import *  # noqa: F403
from ember.ops.linalg_pinv import *  # noqa: F403
from ember.ops.linalg_scaled import *  # noqa: F403
from ember.ops.linalg_solve import *  # noqa: F403
from ember.ops.linalg_tensor import *  # noqa: F403
from ember.ops.linear import *  # noqa: F403
from ember.ops.linear_cross_entropy import *  # noqa: F403
from ember.ops.lobpcg import *  # noqa: F403
from ember.ops.local_response_norm import *  # noqa: F403
from ember.ops.logcumsumexp import *  # noqa: F403
from ember.ops.logsumexp import *  # noqa: F403
from ember.ops.loss import *  # noqa: F403
from ember.ops.lowrank import *  # noqa: F403
from ember.ops.lp_pool import *  # noqa: F403
from ember.ops.margin_loss import *  # noqa: F403
from ember.ops.masking import *  # noqa: F403
from ember.ops.native_functions import *  # noqa: F403
from ember.ops.new_constructors import *  # noqa: F403
from ember.ops.nonzero import *  # noqa: F403
from ember.ops.normalization import *  # noqa: F403
from ember.ops.norms import *  # noqa: F403
from ember.ops.number_protocol import _contains  # noqa: F401 - binds int(t), x in t, …
from ember.ops.pad import *  # noqa: F403
from ember.ops.pixel_shuffle import *  # noqa: F403
from ember.ops.pool import *  # noqa: F403
from ember.ops.primitive import PRIMITIVES, Primitive, TensorSpec, apply, primitive
from ember.ops.random import *  # noqa: F403
from ember.ops.random_counts import *  # noqa: F403
from ember.ops.random_fill import *  # noqa: F403
from ember.ops.random_gamma import *  # noqa: F403
from ember.ops.random_von_mises import *  # noqa: F403
from ember.ops.reduce import *  # noqa: F403
from ember.ops.rnn import *  # noqa: F403
from ember.ops.rnn_cells import *  # noqa: F403
from ember.ops.rounding import *  # noqa: F403
from ember.ops.scatter_reduce import *  # noqa: F403
from ember.ops.scatter_slices import *  # noqa: F403
from ember.ops.search import *  # noqa: F403
from ember.ops.segment_reduce import *  # noqa: F403
from ember.ops.select import *  # noqa: F403
from ember.ops.shape import *  # noqa: F403
from ember.ops.softmax import *  # noqa: F403
from ember.ops.sort import *  # noqa: F403
from ember.ops.special import *  # noqa: F403
from ember.ops.split_stack import *  # noqa: F403
from ember.ops.statistics import *  # noqa: F403
from ember.ops.stft import *  # noqa: F403
from ember.ops.storage import *  # noqa: F403
from ember.ops.storage_objects import *  # noqa: F403
from ember.ops.tensor_kind import *  # noqa: F403
from ember.ops.tensor_methods import *  # noqa: F403
from ember.ops.transposes import *  # noqa: F403
from ember.ops.unary import *  # noqa: F403
from ember.ops.unfold import *  # noqa: F403
from ember.ops.unpool import *  # noqa: F403
from ember.ops.unravel import *  # noqa: F403
from ember.ops.variance import *  # noqa: F403
from ember.ops.view_dtype import ViewDtype  # noqa: F401 - registers view(dtype)'s primitive
from ember.ops.windows import *  # noqa: F403

# by name: the star imports rebind names such as ``sort`` and ``pad`` to their functions
_FAMILIES = ("activations", "adaptive_avg_pool", "arithmetic", "attention", "batch_norm_sync",
             "broadcast", "compare",
             "complex_math", "complex_parts", "construct", "constructors", "conv", "convert",
             "copy_variants", "creation", "ctc_loss", "diagonal", "discrete", "distance", "dlpack",
             "dropout", "embedding", "embedding_bag_native", "fake_quantize",
             "fake_quantize_learnable", "fill", "foreach",
             "fractional_pool", "frexp", "from_file", "fused_arithmetic",
             "functional_aliases", "gamma", "gather", "gradient", "grid_sample", "group_norm",
             "gumbel_softmax",
             "hash_tensor", "histogram", "igamma", "im2col", "indexing", "inplace_functions",
             "integrate", "interpolate", "join", "layer_norm", "legacy_tensor_types", "linalg",
             "linalg_composite", "linalg_decomp", "linalg_det", "linalg_eig", "linalg_ldl",
             "linalg_legacy", "linalg_lu", "linalg_pinv", "linalg_scaled", "linalg_solve",
             "linalg_tensor",
             "linear", "linear_cross_entropy", "local_response_norm", "lobpcg", "logcumsumexp",
             "logsumexp",
             "loss", "lowrank", "lp_pool",
             "margin_loss", "masking", "multi_head_attention", "native_functions",
             "new_constructors", "nonzero",
             "normalization", "norms", "pad", "pixel_shuffle", "pool", "random", "random_counts",
             "random_fill", "random_normal",
             "random_gamma", "random_von_mises", "reduce", "rnn", "rnn_cells", "rounding",
             "scatter_reduce", "scatter_slices", "search", "segment_reduce", "select", "shape",
             "softmax", "sort", "special", "split_stack", "statistics", "stft", "storage",
             "storage_objects", "tensor_kind", "tensor_methods", "transposes", "unary",
             "unfold", "unpool", "unravel", "variance", "windows")
__all__ = [name for family in _FAMILIES
           for name in import_module(f"ember.ops.{family}").__all__]
__all__ += ["PRIMITIVES", "Primitive", "TensorSpec", "apply", "primitive"]

import_module("ember.ops.reflected")  # (number <op> tensor)
import_module("ember.ops.numpy_ufuncs")  # (np.sin(tensor) is a tensor)

# the binary methods whose ops do not hand a tensor-like operand over themselves (``hypot``):
# their hand-over forms, as the ``ember.*`` functions' ``out=`` forms do (``dense.hypot(nt)``)
import_module("ember.ops.forwarding").hand_over_methods(
    import_module("ember.tensor").Tensor, import_module("ember.ops.out_names").TORCH)

# last, over every operator the families bound: ``t + obj`` gives way to ``obj.__radd__``
import_module("ember.ops.operator_protocol").bind()
