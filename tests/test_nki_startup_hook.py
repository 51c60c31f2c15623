"""The start-up hook: in a fresh interpreter of an environment where openneuron is installed,
``import nki`` and the older ``neuronxcc.nki`` names resolve without importing anything first,
the hook itself imports neither openneuron nor torch, and a real package of either name wins.

The environment is a throwaway virtual environment whose site-packages holds what an install
puts there: the path to this source tree's packages (as an editable install does) and the
start-up .pth file from the tree, so the test runs the files this checkout ships.
"""

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import numpy
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "python"
STARTUP_PTH = SOURCE / "openneuron-startup.pth"


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """A virtual environment with openneuron (this tree), torch and numpy on its path and the
    start-up hook in its site-packages; returns its interpreter."""
    root = tmp_path_factory.mktemp("env")
    venv.create(root, with_pip=False, symlinks=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dependencies = {str(Path(m.__file__).resolve().parent.parent) for m in (torch, numpy)}
    # Path lines sort before the hook, as setuptools' own `__editable__.*.pth` does.
    (Path(site) / "00-dependencies.pth").write_text("\n".join(sorted(dependencies)) + "\n")
    (Path(site) / "01-source-tree.pth").write_text(f"{SOURCE}\n")
    (Path(site) / STARTUP_PTH.name).write_text(STARTUP_PTH.read_text())
    return python


def run_fresh(python, code, extra_path=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_start_up_installs_the_finder_without_importing_torch(environment):
    done = run_fresh(
        environment,
        """
        import sys
        finders = [f for f in sys.meta_path if getattr(f, "_openneuron_alias_finder", False)]
        print(len(finders), "torch" in sys.modules, "openneuron" in sys.modules)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False", "False"]


def test_both_api_generations_import_in_a_fresh_interpreter(environment):
    done = run_fresh(
        environment,
        """
        import nki
        import nki.isa
        import nki.language as nl
        from neuronxcc import nki as older
        import neuronxcc.nki.isa as older_isa
        import neuronxcc.nki.language as older_nl
        import neuronxcc.nki.typing as older_typing
        import openneuron.nki, openneuron.nki.legacy.nki as legacy
        import sys
        finders = [f for f in sys.meta_path if getattr(f, "_openneuron_alias_finder", False)]
        assert nki is openneuron.nki and nl is openneuron.nki.language
        assert nki.isa is openneuron.nki.isa
        assert older is legacy and older_nl is legacy.language and older_isa is legacy.isa
        assert issubclass(older_typing.mutable_tensor, older_typing.tensor)
        print(len(finders), nki.__name__, older.__name__, openneuron.__file__)
        """,
    )
    assert done.returncode == 0, done.stderr
    count, name, older_name, location = done.stdout.split()
    assert (count, name, older_name) == ("1", "openneuron.nki", "openneuron.nki.legacy.nki")
    assert Path(location).is_relative_to(SOURCE)  # this tree, not another install


def test_real_packages_of_either_name_win(environment, tmp_path):
    for name in ("nki", "neuronxcc"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"ORIGIN = 'real {name}'\n")
    (tmp_path / "neuronxcc" / "nki").mkdir()
    (tmp_path / "neuronxcc" / "nki" / "__init__.py").write_text("ORIGIN = 'real older nki'\n")
    done = run_fresh(
        environment,
        """
        import nki
        from neuronxcc import nki as older
        import openneuron.nki
        print(repr(nki.ORIGIN), repr(older.ORIGIN), openneuron.nki.__name__)
        """,
        extra_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("'")[1::2] == ["real nki", "real older nki"]
    assert done.stdout.split()[-1] == "openneuron.nki"


def test_a_real_package_added_to_the_path_later_still_wins(environment, tmp_path):
    (tmp_path / "nki").mkdir()
    (tmp_path / "nki" / "__init__.py").write_text("ORIGIN = 'real'\n")
    done = run_fresh(
        environment,
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import nki
        print(getattr(nki, "ORIGIN", nki.__name__))
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "real"


def test_the_package_build_ships_the_hook(tmp_path):
    """`build_py` (whose output is the wheel's root) carries the .pth and its module."""
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)]
        + ["build_py", "--build-lib", str(tmp_path / "lib")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lib" / STARTUP_PTH.name).read_text() == STARTUP_PTH.read_text()
    assert (tmp_path / "lib" / "_openneuron_startup.py").is_file()
    assert (tmp_path / "lib" / "openneuron" / "nki" / "legacy" / "nki" / "language.py").is_file()
