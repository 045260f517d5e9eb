"""ember.hub.load/list/help on real repositories in temporary directories: entry points,
their arguments and docstrings, dependencies, the repository's own modules, and the errors
for everything that can be wrong."""

import sys
import textwrap

import pytest

import ember

HUBCONF = '''
dependencies = ["numpy", "ember"]

import numpy as np

from layers import width  # a module of the repository itself

import ember


def tiny_mlp(hidden=4, *, bias=True):
    """A two-layer perceptron."""
    return ember.nn.Sequential(ember.nn.Linear(width(), hidden, bias=bias), ember.nn.ReLU(),
                               ember.nn.Linear(hidden, 1))


def _private():
    return None


NOT_CALLABLE = 3
'''


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "hubconf.py").write_text(HUBCONF)
    (tmp_path / "layers.py").write_text("def width():\n    return 3\n")
    return tmp_path


def test_load_calls_the_entry_point_with_its_arguments(repo):
    path_before = list(sys.path)
    net = ember.hub.load(str(repo), "tiny_mlp", 5, source="local", bias=False)
    assert isinstance(net, ember.nn.Sequential)
    assert net[0].weight.shape == (5, 3) and net[0].bias is None
    assert sys.path == path_before  # the repository's directory is off the path again
    assert net(ember.ones(2, 3)).shape == (2, 1)
    assert ember.hub.load(repo, "tiny_mlp", source="LOCAL")[0].bias is not None  # a Path


def test_list_and_help(repo):
    assert ember.hub.list(str(repo), source="local") == ["tiny_mlp", "width"]
    assert ember.hub.help(str(repo), "tiny_mlp", source="local") == "A two-layer perceptron."


def test_missing_dependencies_are_all_named(tmp_path):
    (tmp_path / "hubconf.py").write_text(textwrap.dedent('''
        dependencies = ["numpy", "no_such_module_a", "no_such_module_b"]
        def net():
            return 1
    '''))
    with pytest.raises(RuntimeError, match="^Missing dependencies: no_such_module_a, "
                                           "no_such_module_b$"):
        ember.hub.load(str(tmp_path), "net", source="local")
    assert ember.hub.list(str(tmp_path), source="local") == ["net"]  # (list checks none)


@pytest.mark.parametrize("dependencies, error, message", [
    # PyTorch: find_spec's ModuleNotFoundError "No module named 'no_such_pkg'"
    ('["numpy.linalg", "no_such_pkg.sub"]', RuntimeError,
     "^Missing dependencies: no_such_pkg.sub$"),
    # PyTorch checks each character: "Missing dependencies: n, u, m, p, y"
    ('"numpy"', TypeError, r"must be a list of module names.*\['numpy'\]"),
    # PyTorch: find_spec's AttributeError "'int' object has no attribute 'startswith'"
    ('["numpy", 3]', TypeError, r"must be a list of module names, got int 3 in \['numpy', 3\]"),
    # None too (it was taken for "nothing odd found")
    ('["numpy", None]', TypeError,
     r"must be a list of module names, got NoneType None in \['numpy', None\]"),
])
def test_dotted_and_string_dependencies_fail_clearly(tmp_path, dependencies, error, message):
    source = f"dependencies = {dependencies}\ndef net():\n    return 1\n"
    (tmp_path / "hubconf.py").write_text(source)
    with pytest.raises(error, match=message):
        ember.hub.load(str(tmp_path), "net", source="local")


def test_bad_requests_fail_clearly(repo, tmp_path_factory):
    with pytest.raises(RuntimeError, match="Cannot find callable NOT_CALLABLE in hubconf"):
        ember.hub.load(str(repo), "NOT_CALLABLE", source="local")
    with pytest.raises(RuntimeError, match="Cannot find callable nothing in hubconf"):
        ember.hub.help(str(repo), "nothing", source="local")
    with pytest.raises(ValueError, match="model should be a string"):
        ember.hub.load(str(repo), 3, source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp". Allowed values: "github" '
                                         '| "local"'):
        ember.hub.load(str(repo), "tiny_mlp", source="ftp")
    with pytest.raises(RuntimeError, match="hub.list: source='github' is not supported.*"
                                           "source='local'"):
        ember.hub.list("owner/repo")
    with pytest.raises(RuntimeError, match="hub.load: source='github'"):
        ember.hub.load("owner/repo:main", "tiny_mlp")
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="hub.load: no hubconf.py in"):
        ember.hub.load(str(empty), "tiny_mlp", source="local")


def test_each_repository_imports_its_own_modules(tmp_path):
    # two repositories with a module of the same name: PyTorch's load hands the second the
    # first one's module (left in sys.modules), silently running the wrong code
    for name in ("first", "second"):
        (tmp_path / name / "pkg").mkdir(parents=True)
        (tmp_path / name / "hubconf.py").write_text(
            "from helpers_of_repo import NAME\nfrom pkg.part import PART\n"
            "def which():\n    return NAME, PART\n")
        (tmp_path / name / "helpers_of_repo.py").write_text(f"NAME = {name!r}\n")
        (tmp_path / name / "pkg" / "__init__.py").write_text("")
        (tmp_path / name / "pkg" / "part.py").write_text(f"PART = {name!r}\n")
    load = ember.hub.load
    assert load(str(tmp_path / "first"), "which", source="local") == ("first", "first")
    assert load(str(tmp_path / "second"), "which", source="local") == ("second", "second")
    assert load(str(tmp_path / "first"), "which", source="local") == ("first", "first")
    assert sys.modules["helpers_of_repo"].NAME == "first"  # the last load's stay, as PyTorch
