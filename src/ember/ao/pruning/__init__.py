"""``torch.ao.pruning``: sparsifiers that learn masks for weights (``FakeSparsity``
parametrizations), and schedulers of their sparsity levels."""

from ember.ao.pruning import selection
from ember.ao.pruning.base_sparsifier import BaseSparsifier
from ember.ao.pruning.fake_sparsity import (
    FakeSparsity,
    fqn_to_module,
    get_arg_info_from_tensor_fqn,
    module_to_fqn,
)
from ember.ao.pruning.nearly_diagonal_sparsifier import NearlyDiagonalSparsifier
from ember.ao.pruning.scheduler import BaseScheduler, CubicSL, LambdaSL
from ember.ao.pruning.weight_norm_sparsifier import WeightNormSparsifier

__all__ = ["BaseSparsifier", "WeightNormSparsifier", "NearlyDiagonalSparsifier", "FakeSparsity",
           "BaseScheduler", "LambdaSL", "CubicSL", "fqn_to_module", "module_to_fqn",
           "get_arg_info_from_tensor_fqn"]
