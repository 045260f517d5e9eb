"""Models from a repository's ``hubconf.py``: :func:`load`, :func:`list` and :func:`help`.

A hub repository is a directory with a ``hubconf.py`` whose public callables are its entry
points (each returns a model) and whose optional ``dependencies`` list names the modules it
needs. Ember loads repositories already on disk (``source='local'``): it never fetches
code. PyTorch's default, ``source='github'``, downloads and runs a repository from a code
host; Ember refuses it with a hint to fetch the repository yourself and load it locally.

Importing ``hubconf.py`` runs it: load only repositories you trust.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError

__all__ = ["help", "list", "load"]

_HUBCONF = "hubconf.py"


def _repo_dir(repo_or_dir: str | os.PathLike, source: str, op: str) -> str:
    """The local directory of the repository; refuses an unknown ``source`` and 'github'."""
    kind = source.lower()
    if kind not in ("github", "local"):
        raise ArgumentError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if kind == "github":
        raise RuntimeError(f"hub.{op}: source='github' is not supported: Ember never downloads "
                           f"code. Hint: fetch the repository {repo_or_dir!r} yourself (e.g. "
                           f"git clone) and call ember.hub.{op}(<its directory>, ..., "
                           "source='local')")
    path = os.path.expanduser(os.fspath(repo_or_dir))
    if not os.path.isfile(os.path.join(path, _HUBCONF)):
        raise FileNotFoundError(f"hub.{op}: no {_HUBCONF} in {path!r}. Hint: pass the directory "
                                f"that holds the repository's {_HUBCONF}")
    return path


_loaded_repositories: set[str] = set()  # (real paths) whose modules may sit in sys.modules


@contextlib.contextmanager
def _repository_imports(path: str) -> Iterator[None]:
    """``path`` first on ``sys.path`` while the hubconf imports its own modules. Modules that
    an earlier load imported from another repository under a name this one provides too
    (``utils``, ``models``) leave ``sys.modules`` first, so that this repository gets its
    own; PyTorch keeps them, and a second repository silently runs the first one's code."""
    real = os.path.realpath(path)
    others = tuple(repo + os.sep for repo in _loaded_repositories if repo != real)
    provided = _top_level_modules(path)
    for name, module in builtins.list(sys.modules.items()):
        if others and name.partition(".")[0] in provided:
            where = _module_location(module) or ""
            if where.startswith(others) and not where.startswith(real + os.sep):
                del sys.modules[name]  # (the second test: a repository inside another one)
    _loaded_repositories.add(real)
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _top_level_modules(path: str) -> set[str]:
    """The names of the modules and packages (namespace ones too) directly in ``path``."""
    names = {info.name for info in pkgutil.iter_modules([path])}
    return names | {entry.name for entry in os.scandir(path)
                    if entry.is_dir() and entry.name.isidentifier()}


def _module_location(module: Any) -> str | None:
    """The real path of ``module``'s file (or a namespace package's first directory)."""
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", ())),
                                                      None)
    return os.path.realpath(where) if isinstance(where, str) else None


def _import_hubconf(path: str) -> ModuleType:
    """``path``'s ``hubconf.py``, run afresh as a module named ``hubconf``."""
    spec = importlib.util.spec_from_file_location("hubconf", os.path.join(path, _HUBCONF))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _entry(hubconf: ModuleType, model: str) -> Callable:
    """The entry point ``model`` of ``hubconf``, after checking its ``dependencies``."""
    if not isinstance(model, str):
        raise ArgumentError("Invalid input: model should be a string of function name")
    needed = getattr(hubconf, "dependencies", None) or ()
    if isinstance(needed, str):  # (PyTorch checks each of its characters)
        raise ArgumentTypeError(f"hubconf.py: dependencies must be a list of module names, got "
                                f"the string {needed!r}. Hint: dependencies = [{needed!r}]")
    needed = builtins.list(needed)  # (read once: it may be a generator)
    odd = [name for name in needed if not isinstance(name, str)]  # (None too)
    if odd:  # (PyTorch: find_spec's "'int' object has no attribute 'startswith'")
        raise ArgumentTypeError(f"hubconf.py: dependencies must be a list of module names, got "
                                f"{type(odd[0]).__name__} {odd[0]!r} in {needed!r}")
    missing = [name for name in needed if not _importable(name)]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    entry = getattr(hubconf, model, None) if model in dir(hubconf) else None
    if not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def _importable(name: str) -> bool:
    """Whether module ``name`` can be found; a dotted name under a missing package cannot
    (where ``find_spec`` raises)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def load(repo_or_dir: str | os.PathLike, model: str, *args: Any, source: str = "github",
         trust_repo: bool | str | None = "check", force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """``model(*args, **kwargs)`` from the ``hubconf.py`` in the directory ``repo_or_dir``
    (``source='local'``), after checking that the modules in its ``dependencies`` exist.

    ``trust_repo``, ``force_reload``, ``verbose`` and ``skip_validation`` concern downloads
    from a code host, which Ember does not make (``source='github'`` raises with a hint);
    they are accepted for PyTorch compatibility.

    Raises:
        RuntimeError: for missing dependencies (all named), an entry point that is not
            there or not callable, or ``source='github'``.
        ValueError: for an unknown ``source`` or a ``model`` that is not a string.
        FileNotFoundError: when the directory has no ``hubconf.py``.

    Example:
        >>> net = ember.hub.load("path/to/repo", "tiny_mlp", hidden=8,
        ...                      source="local")  # doctest: +SKIP
    """
    del trust_repo, force_reload, verbose, skip_validation
    path = _repo_dir(repo_or_dir, source, "load")
    with _repository_imports(path):
        return _entry(_import_hubconf(path), model)(*args, **kwargs)


def list(github: str | os.PathLike, force_reload: bool = False,  # noqa: A001 - torch.hub.list
         skip_validation: bool = False, trust_repo: bool | str | None = "check",
         verbose: bool = True, *, source: str = "github") -> builtins.list[str]:
    """The entry points of a repository's ``hubconf.py``: its public callables, sorted.

    PyTorch's ``list`` takes only repositories on a code host; Ember adds ``source`` (as
    :func:`load` has) and lists a directory with ``source='local'``.

    Example:
        >>> ember.hub.list("path/to/repo", source="local")  # doctest: +SKIP
        ['tiny_mlp']
    """
    del force_reload, skip_validation, trust_repo, verbose
    path = _repo_dir(github, source, "list")
    with _repository_imports(path):
        hubconf = _import_hubconf(path)
    return [name for name in dir(hubconf)
            if not name.startswith("_") and callable(getattr(hubconf, name))]


def help(github: str | os.PathLike, model: str,  # noqa: A001 - torch.hub.help
         force_reload: bool = False, skip_validation: bool = False,
         trust_repo: bool | str | None = "check", *, source: str = "github") -> str | None:
    """The docstring of the entry point ``model`` of a repository's ``hubconf.py``
    (``source='local'`` for a directory, as in :func:`list`).

    Example:
        >>> print(ember.hub.help("path/to/repo", "tiny_mlp", source="local"))  # doctest: +SKIP
        A two-layer perceptron.
    """
    del force_reload, skip_validation, trust_repo
    path = _repo_dir(github, source, "help")
    with _repository_imports(path):
        return _entry(_import_hubconf(path), model).__doc__
