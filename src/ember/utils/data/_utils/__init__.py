"""``torch.utils.data._utils``'s path: its ``collate`` module, whose ``collate`` and
``default_collate_fn_map`` torch's ``default_collate`` documents for collating custom types."""

from ember.utils.data._utils import collate  # noqa: F401 (as torch's)
