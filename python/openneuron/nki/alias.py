"""Lets kernel files that ``import nki`` run unchanged when AWS's nki package is absent.

A finder at the front of ``sys.meta_path`` answers ``nki`` and ``nki.*`` with the modules of
``openneuron.nki`` (the same objects, so one trace state), but only when no other ``nki`` can
be found on ``sys.path``: an installed AWS nki always wins. The older name ``neuronxcc.nki`` is
answered the same way when no ``neuronxcc`` is installed, and so is each package of
``PACKAGE_ALIASES`` (``torch_neuronx``, TorchNeuron's import name).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# Import names answered with an openneuron package (with its submodules) when not installed.
PACKAGE_ALIASES = {"torch_neuronx": "openneuron.torch_neuronx"}


class _Loader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.original_spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.original_spec  # the module keeps its own identity


class NkiAliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "neuronxcc" or fullname.startswith("neuronxcc."):
            return self._legacy_spec(fullname)
        if fullname.partition(".")[0] in PACKAGE_ALIASES:
            return self._package_spec(fullname)
        if fullname != "nki" and not fullname.startswith("nki."):
            return None
        if fullname == "nki":
            if importlib.machinery.PathFinder.find_spec("nki") is not None:
                return None  # the real nki package is installed
        elif not getattr(sys.modules.get("nki"), "_is_openneuron_alias", False):
            return None
        name = "openneuron." + fullname
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(name), is_package=True)

    @staticmethod
    def _legacy_spec(fullname):
        # The older package name (``neuronxcc.nki``, kernels import its typing module), answered
        # only when no neuronxcc is installed.
        if fullname == "neuronxcc":
            if importlib.machinery.PathFinder.find_spec("neuronxcc") is not None:
                return None
            name = "openneuron.nki.legacy"
        elif not getattr(sys.modules.get("neuronxcc"), "_is_openneuron_alias", False):
            return None
        else:
            name = "openneuron." + fullname.removeprefix("neuronxcc.")
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(name), is_package=True)

    @staticmethod
    def _package_spec(fullname):
        top, _, rest = fullname.partition(".")
        if not rest:
            if importlib.machinery.PathFinder.find_spec(top) is not None:
                return None  # the real package is installed
        elif not getattr(sys.modules.get(top), "_is_openneuron_alias", False):
            return None
        name = PACKAGE_ALIASES[top] + (f".{rest}" if rest else "")
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(name), is_package=True)


def install():
    """Installs the finder once; returns True when ``import nki`` now gives openneuron.nki."""
    if not any(isinstance(f, NkiAliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, NkiAliasFinder())
    return importlib.machinery.PathFinder.find_spec("nki") is None
