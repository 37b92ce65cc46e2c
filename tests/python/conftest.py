"""Shared fixtures of hora's Python tests. Each test file runs under `horarun -np N python -m
pytest`: every rank runs the same tests in the same order, so collectives match across ranks.
hora is initialised once per process (session scope) and shut down at the end."""

import os

import pytest


@pytest.fixture(scope="session")
def hora_job():
    import hora

    hora.init()
    yield hora
    hora.shutdown()


@pytest.fixture
def rank(hora_job):
    return hora_job.rank()


@pytest.fixture
def size(hora_job):
    return hora_job.size()


def ranks_of_job():
    """HORA_SIZE as horarun set it (1 outside horarun)."""
    return int(os.environ.get("HORA_SIZE", "1"))


@pytest.fixture(scope="session")
def job_size():
    """The job's size as horarun set it, for tests that own init and shutdown (process sets:
    the sets are part of init)."""
    return ranks_of_job()
