"""GPU tensors through the binding without a GPU: DLPack capsules built by hand with ctypes
(kDLCUDA, kDLCUDAManaged, kDLCUDAHost) are read with the right device, and a tensor on a GPU the
job has no path to (or not this rank's GPU) fails naming the tensor and the device."""

import ctypes

import numpy as np
import pytest

import hora
from hora import _core

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLFloat = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Capsule:
    """A legacy "dltensor" capsule over `array`'s float32 memory, claiming `device_type`/`id`;
    keeps the ctypes structures (and the array) alive as long as the capsule is used."""

    def __init__(self, array, device_type, device_id):
        self.array = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = array.ctypes.data
        t.device = DLDevice(device_type, device_id)
        t.ndim = array.ndim
        t.dtype = DLDataType(kDLFloat, 32, 1)
        t.shape = self.shape
        t.strides = None
        t.byte_offset = 0
        self.capsule = _new_capsule(ctypes.addressof(self.managed), b"dltensor", None)


@pytest.mark.parametrize(
    "device_type,device_id,expected",
    [
        (kDLCUDA, 0, "cuda:0"),
        (kDLCUDA, 3, "cuda:3"),
        (kDLCUDAManaged, 1, "cuda:1"),
        (kDLCUDAHost, 0, "cpu"),
        (kDLCPU, 0, "cpu"),
    ],
)
def test_dlpack_device_types(hora_job, device_type, device_id, expected):
    c = Capsule(np.zeros((2, 3), np.float32), device_type, device_id)
    dtype, shape, device = _core.describe(c.capsule, "d")
    assert (dtype, tuple(shape), device) == ("float32", (2, 3), expected)


def test_gpu_tensor_without_a_path_names_tensor_and_device(hora_job):
    # cuda:99 exists nowhere: without a GPU path the job says why; with one, it is not this
    # rank's GPU. Either way the error names the tensor and the device, and nothing is read.
    c = Capsule(np.ones(4, np.float32), kDLCUDA, 99)
    with pytest.raises(hora.HoraError, match=r"tensor 'gpu\.w'.*cuda:99"):
        hora.allreduce_(c.capsule, name="gpu.w")
    c2 = Capsule(np.ones(4, np.float32), kDLCUDA, 99)
    with pytest.raises(hora.HoraError, match=r"tensor 'gpu\.b'.*cuda:99"):
        hora.broadcast_(c2.capsule, 0, name="gpu.b")
    # The job goes on: a host collective right after works.
    x = np.ones(3, np.float32)
    hora.allreduce_(x, op=hora.Sum, name="after.gpu")
    assert np.all(x == hora.size())


def test_pinned_host_memory_is_a_host_tensor(hora_job):
    a = np.full(5, 2.0, np.float32)
    c = Capsule(a, kDLCUDAHost, 0)
    hora.allreduce_(c.capsule, op=hora.Sum, name="pinned")
    assert np.all(a == 2.0 * hora.size())


def test_stream_argument_is_accepted(hora_job):
    x = np.ones(2, np.float32)
    h = _core.allreduce_async(
        x, None, "streamed", hora.Sum, 1.0, 1.0, _core.Compression.none, stream=0
    )
    hora.synchronize(h)
    assert np.all(x == hora.size())


def test_host_handles_have_no_device_and_wait_on_stream_is_wait(hora_job):
    x = np.ones(3, np.float32)
    h = _core.allreduce_async(x, None, "host.wos", hora.Sum, 1.0, 1.0, _core.Compression.none)
    assert h.device == -1
    out = h.wait_on_stream(0)
    assert out is x and np.all(x == hora.size())
    g = _core.allgather_async(
        np.full((1, 2), hora.rank(), np.float32),
        lambda dtype, shape: np.empty(shape, dtype),
        "host.ag",
        stream=0,
    )
    assert g.device == -1
    gathered = g.wait_on_stream(0)
    assert gathered.shape == (hora.size(), 2)


def test_gpu_allgather_alltoall_reducescatter_without_a_path_name_tensor_and_device(hora_job):
    alloc = lambda dtype, shape: np.empty(shape, dtype)  # noqa: E731
    for name, start in [
        ("gpu.ag", lambda c: _core.allgather_async(c, alloc, "gpu.ag", stream=0)),
        ("gpu.a2a", lambda c: _core.alltoall_async(c, [], alloc, "gpu.a2a", stream=0)),
        ("gpu.rs", lambda c: _core.reducescatter_async(c, alloc, "gpu.rs", hora.Sum, stream=0)),
    ]:
        c = Capsule(np.ones((hora.size(), 2), np.float32), kDLCUDA, 99)
        with pytest.raises(hora.HoraError, match=rf"tensor '{name}'.*cuda:99"):
            hora.synchronize(start(c.capsule))
