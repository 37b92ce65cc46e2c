"""Whole elastic hora.torch jobs under horarun's elastic driver (tests/python/elastic_launch/
scripts/torch_train.py): a worker SIGKILLed or raising mid-epoch, a host added by the discovery
script, and too few workers left. Each survivor must finish every epoch in the process it
started in, with the same parameters as the others and as one process replaying the schedule
(the rolled-back steps are replayed with the same batches, so the rollback to the last commit
lands on the reference)."""

import os
import sys

import pytest
import torch
from launch import SCRIPTS, run_job

sys.path.insert(0, SCRIPTS)
import torch_train

EPOCHS, BATCHES = 3, 8


def params(result):
    return [torch.tensor(p) for p in result["params"]]


def check_trained(job, survivors, size, generation):
    assert job.returncode == 0, job.output
    assert sorted(job.results) == sorted(survivors), job.output
    reference = torch_train.reference(EPOCHS, BATCHES)
    for worker in survivors:
        result = job.results[worker]
        # Started once, in the process that finished (no restart).
        assert job.started[worker] == [result["pid"]], job.started
        assert (result["size"], result["generation"]) == (size, generation)
        for a, b in zip(params(result), params(job.results[survivors[0]]), strict=True):
            assert torch.equal(a, b), f"worker {worker}'s parameters differ from the others'"
        for a, b in zip(params(result), reference, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    return reference


def check_every_step_completed(log, last_step):
    steps = [step for step, _, _ in log]
    assert set(steps) == set(range(last_step + 1)), steps
    assert steps[-1] == last_step


@pytest.mark.parametrize("fault", ["kill", "raise"])
def test_survivors_finish_after_a_worker_fails(tmp_path, fault):
    """Worker 1 of 3 SIGKILLs itself (or raises) at step 10, epoch 1's third batch: workers 0
    and 2 roll back to the commit at epoch 0's end (after step 7), go on as a job of 2 and
    finish."""
    job = run_job(
        str(tmp_path),
        ["-np", "3", "--min-np", "2", "--max-np", "3", "--elastic-timeout", "30"],
        "torch_train.py",
        ["--fault", fault, "--fault-worker", "1", "--fault-step", "10"],
    )
    check_trained(job, [0, 2], size=2, generation=1)
    assert sorted(job.started) == [0, 1, 2]
    for worker in (0, 2):
        log = job.results[worker]["log"]
        check_every_step_completed(log, EPOCHS * BATCHES - 1)
        # Steps 0..9 at 3 ranks in generation 0, then from step 8 at 2 ranks in generation 1.
        assert [(s, g) for s, size, g in log if size == 3] == [(s, 0) for s in range(10)]
        assert [(s, g) for s, size, g in log if size == 2] == [
            (s, 1) for s in range(8, EPOCHS * BATCHES)
        ]
    if fault == "raise":
        assert "worker 1 fails at step 10" in job.output


def test_new_worker_joins_at_a_commit(tmp_path):
    """Discovery offers 2 slots, then 3 once the job asked (the file exists): the ranks see
    the added host together at a check, the new worker joins with the state of that point, and
    all 3 finish with the reference's parameters."""
    grow_file = os.path.join(tmp_path, "grow")
    discovery = os.path.join(tmp_path, "discover.sh")
    with open(discovery, "w") as f:
        f.write(
            f"#!/bin/sh\nif [ -e {grow_file} ]; then echo localhost:3; else echo localhost:2; fi\n"
        )
    os.chmod(discovery, 0o755)
    job = run_job(
        str(tmp_path),
        [
            "-np",
            "2",
            "--min-np",
            "2",
            "--max-np",
            "3",
            "--host-discovery-script",
            discovery,
            "--elastic-timeout",
            "30",
        ],
        "torch_train.py",
        ["--grow-step", "7", "--grow-file", grow_file, "--grow-size", "3"],
    )
    check_trained(job, [0, 1, 2], size=3, generation=1)
    for worker in (0, 1):
        log = job.results[worker]["log"]
        check_every_step_completed(log, EPOCHS * BATCHES - 1)
        assert [s for s, size, _ in log if size == 2] == list(range(7))
    # The newcomer trained from step 7 on, with the state the others had there.
    assert [s for s, _, _ in job.results[2]["log"]] == list(range(7, EPOCHS * BATCHES))


def test_below_min_np_fails_clearly(tmp_path):
    """2 workers, --min-np 2: after worker 1 dies and no slot comes within the elastic timeout,
    horarun fails naming min-np, and nothing of the job is left."""
    job = run_job(
        str(tmp_path),
        ["-np", "2", "--min-np", "2", "--max-np", "2", "--elastic-timeout", "4"],
        "torch_train.py",
        ["--fault", "kill", "--fault-worker", "1", "--fault-step", "4"],
        timeout=60,
    )
    assert job.returncode != 0
    assert "min-np" in job.output, job.output
    assert not job.results
