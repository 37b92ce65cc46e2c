"""A whole elastic hora.keras job (scripts/keras_train.py): KerasState and the elastic
callbacks in model.fit, worker 1 of 3 SIGKILLed in the second epoch. Workers 0 and 2 restore
the last commit, refit the remaining epochs as a job of 2 in the processes they started in,
and end with the same weights."""

import numpy as np
from launch import run_job


def test_keras_survivors_finish_after_a_kill(tmp_path):
    job = run_job(
        str(tmp_path),
        ["-np", "3", "--min-np", "2", "--max-np", "3", "--elastic-timeout", "30"],
        "keras_train.py",
        ["--epochs", "4", "--fault-worker", "1", "--fault-batch", "6"],  # 4 batches an epoch
        timeout=150,
    )
    assert job.returncode == 0, job.output
    assert sorted(job.results) == [0, 2], job.output
    assert sorted(job.started) == [0, 1, 2]
    first = job.results[0]
    for worker in (0, 2):
        result = job.results[worker]
        assert job.started[worker] == [result["pid"]]
        assert (result["size"], result["generation"], result["epoch"]) == (2, 1, 4)
        # Epoch 1 at 3 ranks; epoch 2 (interrupted at its second batch) again from its start
        # at 2 ranks, then epochs 3 and 4.
        assert [tuple(e) for e in result["epochs"]] == [(1, 3, 0), (2, 2, 1), (3, 2, 1), (4, 2, 1)]
        for a, b in zip(result["weights"], first["weights"], strict=True):
            assert np.array_equal(np.array(a), np.array(b)), f"worker {worker}'s weights differ"
