"""Finds the dense-math libraries loaded at run time: oneMKL comes from the `mkl` package,
which pip puts in the environment's ``lib`` folder (a venv's, or the user base's)."""

import importlib.metadata
import os
import sys

MKL_SONAME = "libmkl_rt.so.3"


def mkl_library_path() -> str:
    """The path of the installed ``mkl`` package's ``libmkl_rt``, or "" when there is none."""
    candidate = os.path.join(sys.prefix, "lib", MKL_SONAME)
    if os.path.isfile(candidate):
        return candidate
    try:
        files = importlib.metadata.files("mkl") or []
    except importlib.metadata.PackageNotFoundError:
        return ""
    for file in files:
        if file.name == MKL_SONAME:
            return str(file.locate().resolve())
    return ""
