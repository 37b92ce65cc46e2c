"""What the process-set tests share: the set shapes that fit a job, and each rank's inputs."""

from __future__ import annotations


def shapes(n: int) -> list[list[int]]:
    """{0}, the even ranks, the odd ranks, all but rank 0: without repeats or the whole job."""
    out: list[list[int]] = []
    for ranks in (
        [0],
        list(range(0, n, 2)),
        list(range(1, n, 2)),
        list(range(1, n)),
    ):
        if ranks and len(ranks) < n and ranks not in out:
            out.append(ranks)
    return out
