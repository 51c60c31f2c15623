"""NKI element types, their simulator codes and NumPy counterparts."""

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bfloat16/fp8 arrays then travel as raw bits
    ml_dtypes = None


class DType:
    """An element type: ``name`` as NKI spells it, ``code`` as the simulator numbers it."""

    def __init__(self, name: str, code: int, itemsize: int, is_float: bool, numpy_name: str):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self.is_float = is_float
        self._numpy_name = numpy_name

    @property
    def numpy(self) -> np.dtype:
        if self._numpy_name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            if ml_dtypes is None:
                raise TypeError(f"{self.name} arrays need the ml_dtypes package")
            return np.dtype(getattr(ml_dtypes, self._numpy_name))
        return np.dtype(self._numpy_name)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype, so NumPy takes an NKI dtype where it takes one
        (``array.astype(nl.bfloat16)``, as AWS's tests write)."""
        return self.numpy

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __str__(self) -> str:
        # The bare name, as AWS's dtypes (and NumPy's dtype objects) print: kernels compare
        # str(dtype) with "float8_e4m3", or with str(np.dtype("float32")).
        return self.name

    def __eq__(self, other) -> bool:
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    # Each type is one object: copies (test harnesses deep-copy their parameter sets) and
    # unpickled values are that object, so identity-based checks such as ``dtype in (...)`` hold.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = DType("bool", 0, 1, False, "bool")
int8 = DType("int8", 1, 1, False, "int8")
int16 = DType("int16", 2, 2, False, "int16")
int32 = DType("int32", 3, 4, False, "int32")
uint8 = DType("uint8", 4, 1, False, "uint8")
uint16 = DType("uint16", 5, 2, False, "uint16")
uint32 = DType("uint32", 6, 4, False, "uint32")
float16 = DType("float16", 7, 2, True, "float16")
bfloat16 = DType("bfloat16", 8, 2, True, "bfloat16")
float32 = DType("float32", 9, 4, True, "float32")
tfloat32 = DType("tfloat32", 10, 4, True, "float32")
float8_e4m3 = DType("float8_e4m3", 11, 1, True, "float8_e4m3fn")
float8_e5m2 = DType("float8_e5m2", 12, 1, True, "float8_e5m2")
# Packed microscaling (MX) data of NeuronCore-v4: four values an element, opaque to every
# instruction but quantize_mx / nc_matmul_mx and copies (host arrays: the packed bits).
float8_e4m3fn_x4 = DType("float8_e4m3fn_x4", 13, 4, False, "uint32")
float8_e5m2_x4 = DType("float8_e5m2_x4", 14, 4, False, "uint32")
float4_e2m1fn_x4 = DType("float4_e2m1fn_x4", 15, 2, False, "uint16")


def _by_name(name):
    return getattr(DType, name)


ALL = [bool_, int8, int16, int32, uint8, uint16, uint32, float16, bfloat16, float32]
ALL += [tfloat32, float8_e4m3, float8_e5m2, float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4]
# `import nki.dtype as nt; nt.float8_e4m3`: the class `nki.dtype` also names every type.
for _type in ALL:
    setattr(DType, _type.name, _type)
DType.float8_e4m3fn = float8_e4m3
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "float8_e4m3fn": float8_e4m3, "half": float16, "float": float32})
# 64-bit host types narrow as the device stores them.
_BY_NAME.update({"float64": float32, "int64": int32, "uint64": uint32})


def as_dtype(value) -> DType:
    """The DType for an NKI dtype, a NumPy dtype or type, a torch dtype or a name."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"unknown dtype {value!r}")
    name = getattr(value, "name", None) if not isinstance(value, type) else None
    if name is None:
        try:
            name = np.dtype(value).name
        except TypeError:
            name = str(value).replace("torch.", "")
    name = str(name).replace("torch.", "")
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"unsupported dtype {value!r}")
