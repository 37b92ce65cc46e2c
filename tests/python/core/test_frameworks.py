"""Framework tensors through the framework-neutral API by DLPack: PyTorch and TensorFlow
tensors in, results checked against NumPy, outputs allocated by the framework itself."""

import numpy as np
import pytest

import hora


def test_torch_tensors_through_dlpack(hora_job, rank, size):
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) + rank
    hora.allreduce_(x, op=hora.Sum, name="fw.torch.ar")
    want = size * np.arange(6, dtype=np.float32).reshape(2, 3) + size * (size - 1) / 2
    np.testing.assert_allclose(x.numpy(), want)
    out = hora.allgather(
        torch.full((1, 2), rank, dtype=torch.int16),
        name="fw.torch.ag",
        allocator=lambda dt, shape: torch.empty(shape, dtype=torch.int16),
    )
    assert isinstance(out, torch.Tensor)
    assert out[:, 0].tolist() == list(range(size))
    b = torch.tensor([True, rank == 0])
    hora.allreduce_(b, op=hora.Max, name="fw.torch.bool")
    assert b.tolist() == [True, True]


def test_tensorflow_tensors_through_dlpack(hora_job, rank, size):
    if size > 2:
        pytest.skip(
            "TensorFlow's DLPack path is checked at 1 and 2 ranks: importing TensorFlow "
            "in every one of 3-4 ranks costs about a minute on a small machine"
        )
    tf = pytest.importorskip("tensorflow")
    x = tf.constant(np.arange(4, dtype=np.float32) + rank)
    # TensorFlow tensors are immutable: reduce out of place into a NumPy output.
    out = hora.allreduce(
        tf.experimental.dlpack.to_dlpack(x),
        op=hora.Sum,
        name="fw.tf.ar",
        output=np.empty(4, np.float32),
    )
    np.testing.assert_allclose(out, size * np.arange(4) + size * (size - 1) / 2)
    gathered = hora.allgather(
        tf.experimental.dlpack.to_dlpack(tf.ones((2, 2), tf.float64) * rank), name="fw.tf.ag"
    )
    assert gathered.shape == (2 * size, 2)
    np.testing.assert_allclose(gathered[::2, 0], np.arange(size))
