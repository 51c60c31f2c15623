"""Run at interpreter start-up by ``openneuron-startup.pth`` (installed beside this module):
installs the finder that answers ``import nki`` (openneuron/nki/alias.py) in every interpreter
of the environment, without importing openneuron or torch (alias.py is loaded by its path).

An openneuron that cannot be located leaves the names unanswered; an error in alias.py itself
is reported by the interpreter at start-up (and the interpreter carries on).
"""

import importlib.util
import os


def _install_alias_finder():
    spec = importlib.util.find_spec("openneuron")  # locates the package, does not import it
    if spec is None or not spec.submodule_search_locations:
        return
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "nki", "alias.py")
        if os.path.isfile(path):
            alias_spec = importlib.util.spec_from_file_location("_openneuron_nki_alias", path)
            module = importlib.util.module_from_spec(alias_spec)
            alias_spec.loader.exec_module(module)
            module.install()
            return


_install_alias_finder()
