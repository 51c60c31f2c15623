"""Builds the `openneuron._C` extension with CMake (Ninja, ccache) against the installed torch.

Install without build isolation so the build sees the torch in this environment:
    pip install --no-build-isolation -e .
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

ROOT = Path(__file__).resolve().parent
# Processed by `site` at every interpreter start-up: installs the `import nki` finder
# (python/_openneuron_startup.py) without importing torch.
STARTUP_PTH = ROOT / "python" / "openneuron-startup.pth"


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = ROOT / "build"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("OPENNEURON_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build_dir), "-j", jobs], check=True)
        built = ROOT / "python" / "openneuron" / Path(self.get_ext_filename(ext.name)).name
        target = Path(self.get_ext_fullpath(ext.name))
        if built.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(built), str(target))


class BuildPyWithStartupHook(build_py):
    """Puts the start-up .pth at the root of the wheel (site-packages once installed)."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(STARTUP_PTH), str(Path(self.build_lib) / STARTUP_PTH.name))


class EditableWheelWithStartupHook(editable_wheel):
    """An editable install gets the start-up .pth too (beside setuptools' own path .pth,
    which sorts before it, so the hook's module is importable when it runs)."""

    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):
        outputs = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        self.copy_file(str(STARTUP_PTH), str(Path(unpacked_wheel) / STARTUP_PTH.name))
        return outputs


setup(
    ext_modules=[CMakeExtension("openneuron._C")],
    cmdclass={
        "build_ext": CMakeBuild,
        "build_py": BuildPyWithStartupHook,
        "editable_wheel": EditableWheelWithStartupHook,
    },
)
