"""``ember.hub``: PyTorch's ``torch.hub`` — models from a repository's ``hubconf.py``
(:func:`load`, :func:`list`, :func:`help`, for repositories on disk) and checkpoints from URLs
(:func:`load_state_dict_from_url`, :func:`download_url_to_file`), cached under
:func:`get_dir`. See ``docs/hub.md``.
"""

from ember.hub.cache import get_dir, set_dir
from ember.hub.download import download_url_to_file, load_state_dict_from_url
from ember.hub.hubconf import help, list, load  # noqa: A004 - torch.hub's names

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
           "set_dir"]
