"""DLPack capsules for the Python protocol (__dlpack__ / __dlpack_device__ / from_dlpack).

A producer's capsule is named "dltensor_versioned" (DLPack >= 1.0, DLManagedTensorVersioned) or
"dltensor" (the unversioned struct). The consumer renames it "used_..." once it owns the tensor;
a capsule still carrying its first name when collected calls the tensor's deleter (so a tensor
nobody consumed is freed, and one that was consumed is not freed twice). The C side
(include/wick_dlpack.h) does the conversion; this file only moves pointers in and out of capsules.
"""
import ctypes
from ctypes import POINTER, c_char_p, c_int, c_void_p

from ._lib import DLManagedTensor, DLManagedTensorVersioned

NAME_V = b"dltensor_versioned"
NAME_L = b"dltensor"
USED_V = b"used_dltensor_versioned"
USED_L = b"used_dltensor"

_api = ctypes.pythonapi
_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, _DESTRUCTOR]
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_SetName.restype = c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
# the destructor sees a borrowed PyObject* (the capsule being freed): raw-pointer twins
_is_valid_raw = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))


def _destroy(cap):
    """An unconsumed capsule is collected: call its tensor's deleter (exactly once)."""
    if _is_valid_raw(cap, NAME_V):
        t = ctypes.cast(_get_pointer_raw(cap, NAME_V), POINTER(DLManagedTensorVersioned))
        if t.contents.deleter:
            t.contents.deleter(t)
    elif _is_valid_raw(cap, NAME_L):
        t = ctypes.cast(_get_pointer_raw(cap, NAME_L), POINTER(DLManagedTensor))
        if t.contents.deleter:
            t.contents.deleter(t)


_destroy_c = _DESTRUCTOR(_destroy)  # kept alive for the life of the module


def make_capsule(ptr, versioned):
    """A capsule owning the managed tensor at ptr (its deleter runs if nobody consumes it)."""
    return _api.PyCapsule_New(ctypes.cast(ptr, c_void_p), NAME_V if versioned else NAME_L,
                              _destroy_c)


def open_capsule(cap):
    """(pointer, versioned) of an unconsumed DLPack capsule; raises ValueError otherwise."""
    if _api.PyCapsule_IsValid(cap, NAME_V):
        return _api.PyCapsule_GetPointer(cap, NAME_V), True
    if _api.PyCapsule_IsValid(cap, NAME_L):
        return _api.PyCapsule_GetPointer(cap, NAME_L), False
    raise ValueError("not an unconsumed DLPack capsule (named 'dltensor_versioned' or "
                     "'dltensor'); a capsule can be consumed once")


def mark_consumed(cap, versioned):
    """The consumer now owns the tensor: the capsule's destructor must not free it."""
    _api.PyCapsule_SetName(cap, USED_V if versioned else USED_L)
