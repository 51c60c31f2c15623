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

ROOT = Path(__file__).resolve().parent


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


setup(ext_modules=[CMakeExtension("openneuron._C")], cmdclass={"build_ext": CMakeBuild})
