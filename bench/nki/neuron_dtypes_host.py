"""Host-side element-type helpers under the name ``neuron_dtypes``, which the NKI Library's
tests and its MX reference code import (AWS does not publish that package).

Contract: ``static_cast(array, dtype)`` converts a NumPy array to an NKI, NumPy or ml_dtypes
element type, rounding to nearest even as NumPy/ml_dtypes do (fp8 values beyond the type's
range become its NaN/inf as ml_dtypes does); ``sizeinbytes(dtype)`` is the element size;
``finfo`` is NumPy's for the type. The packed MX types (``float8_e4m3fn_x4``,
``float8_e5m2_x4``, ``float4_e2m1fn_x4``) are named so modules that map them import, and
casting to or from one raises NotImplementedError: the simulator has no MX formats.
"""

import numpy as np

from openneuron.nki.dtypes import DType, as_dtype

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


class PackedMxType:
    """A packed MX element type (four narrow values in one element): named, not simulated."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"neuron_dtypes.{self.name}"


float8_e4m3fn_x4 = PackedMxType("float8_e4m3fn_x4")
float8_e5m2_x4 = PackedMxType("float8_e5m2_x4")
float4_e2m1fn_x4 = PackedMxType("float4_e2m1fn_x4")


def _numpy_dtype(dtype):
    if isinstance(dtype, PackedMxType) or "_x4" in str(getattr(dtype, "name", dtype)):
        raise NotImplementedError(f"{dtype!r}: packed MX element types are not simulated")
    if isinstance(dtype, DType):
        return dtype.numpy
    try:
        return np.dtype(dtype)
    except TypeError:
        return as_dtype(dtype).numpy


def static_cast(array, dtype):
    """`array` as a NumPy array of `dtype`, rounded to nearest even."""
    source = np.asarray(array)
    if "_x4" in str(source.dtype):
        raise NotImplementedError(f"{source.dtype}: packed MX element types are not simulated")
    return source.astype(_numpy_dtype(dtype))


def sizeinbytes(dtype):
    """Bytes per element of `dtype`."""
    return _numpy_dtype(dtype).itemsize


def finfo(dtype):
    """The float type's limits (NumPy's finfo, ml_dtypes' for the narrow types)."""
    numpy_dtype = _numpy_dtype(dtype)
    if ml_dtypes is not None and numpy_dtype.kind == "V":
        return ml_dtypes.finfo(numpy_dtype)
    try:
        return np.finfo(numpy_dtype)
    except ValueError:
        return ml_dtypes.finfo(numpy_dtype)


def is_float_type(dtype):
    """True for floating-point element types, bfloat16 and fp8 included."""
    try:
        numpy_dtype = _numpy_dtype(dtype)
    except NotImplementedError:
        return True  # the packed MX types are floats
    return numpy_dtype.kind == "f" or (ml_dtypes is not None and numpy_dtype.kind == "V")


bfloat16 = ml_dtypes.bfloat16 if ml_dtypes is not None else None
bfloat = bfloat16  # the shorter spelling some helpers import
