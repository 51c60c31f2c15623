"""Lets kernel files that ``import nki`` (or the older ``neuronxcc.nki``) run unchanged when
AWS's packages are absent.

A finder at the front of ``sys.meta_path`` answers each name of ``ALIASES`` (and its submodules)
with the openneuron module the table names: the same module objects, so one trace state. It
answers only while no package of that top-level name can be found on ``sys.path``: an installed
AWS package always wins, whenever it appears there.

This file imports nothing but the standard library: the start-up hook (``_openneuron_startup``,
run from a ``.pth`` file) loads it by path to install the finder without importing openneuron
or torch; openneuron itself installs it again on import (once: the finder is found by its
marker attribute, whichever copy of this file made it).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# Alias name -> the openneuron module that answers it; ``alias.sub`` is ``module.sub``.
# The longest matching name wins, so a submodule may be pointed elsewhere than its parent's.
ALIASES = {
    "nki": "openneuron.nki",
    # Submodules of the current API that openneuron keeps as flat modules.
    "nki.isa.constants": "openneuron.nki.isa_constants",
    "nki.language.dtypes": "openneuron.nki.dtypes",
    "nki.compiler": "openneuron.nki.legacy.nki.compiler",
    "nki.collectives": "openneuron.nki.collectives",
    # The older generation of the API, as AWS's compiler package spelled it.
    "neuronxcc": "openneuron.nki.legacy",
    # TorchNeuron's import name (docs/torch_neuronx.md lists what it provides).
    "torch_neuronx": "openneuron.torch_neuronx",
}

_MARKER = "_openneuron_alias_finder"


def target_of(fullname):
    """The openneuron module that answers `fullname`, or None when no alias covers it."""
    best = None
    for alias in ALIASES:
        if fullname == alias or fullname.startswith(alias + "."):
            if best is None or len(alias) > len(best):
                best = alias
    if best is None:
        return None
    return ALIASES[best] + fullname[len(best) :]


class _Loader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.original_spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.original_spec  # the module keeps its own identity
        if not hasattr(module, "__path__"):
            module.__path__ = []  # so an aliased submodule of it (nki.isa.constants) imports


class NkiAliasFinder(importlib.abc.MetaPathFinder):
    """Answers the names of ALIASES while no real package of the top-level name exists."""

    _openneuron_alias_finder = True

    def find_spec(self, fullname, path=None, target=None):
        name = target_of(fullname)
        if name is None:
            return None
        top = fullname.partition(".")[0]
        if top == fullname:
            if importlib.machinery.PathFinder.find_spec(top) is not None:
                return None  # the real package is installed
            if importlib.util.find_spec(name.partition(".")[0]) is None:
                return None  # openneuron itself is gone
        elif not getattr(sys.modules.get(top), "__name__", "").startswith("openneuron."):
            return None  # the top-level name is someone else's
        elif importlib.util.find_spec(name) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(name), is_package=True)


def installed_finder():
    """The alias finder on sys.meta_path (made by either copy of this file), or None."""
    return next((f for f in sys.meta_path if getattr(f, _MARKER, False)), None)


def install():
    """Installs the finder once; returns True when ``import nki`` now gives openneuron.nki."""
    if installed_finder() is None:
        sys.meta_path.insert(0, NkiAliasFinder())
    return importlib.machinery.PathFinder.find_spec("nki") is None
