"""Calls before init and after shutdown raise FailedPreconditionError; init after shutdown
starts afresh. Runs without the session fixture: it owns init and shutdown itself."""

import numpy as np
import pytest

import hora


def test_before_init_after_shutdown():
    assert not hora.is_initialized()
    with pytest.raises(hora.FailedPreconditionError, match=r"before hora.init"):
        hora.rank()
    with pytest.raises(hora.FailedPreconditionError, match=r"tensor 'early'|'early'"):
        hora.allreduce(np.ones(2, np.float32), name="early")
    hora.init()
    assert hora.is_initialized()
    n = hora.size()
    np.testing.assert_allclose(hora.allreduce(np.ones(2, np.float32), op=hora.Sum, name="x"), n)
    hora.shutdown()
    with pytest.raises(hora.FailedPreconditionError):
        hora.allreduce(np.ones(2, np.float32), name="late")
    hora.init()  # afresh
    np.testing.assert_allclose(hora.allreduce(np.ones(2, np.float32), op=hora.Sum, name="y"), n)
    hora.shutdown()


def test_bad_setting():
    with pytest.raises(hora.InvalidArgumentError, match="HORA_FUSION_THRESHOLD"):
        hora.init({"HORA_FUSION_THRESHOLD": "lots"})
    assert not hora.is_initialized()
