"""The files an elastic test job's worker leaves in OUT: started-<id>-<pid> when it starts
(one per process, so a restart shows) and worker<id>.json with its result at the end."""

import json
import os


def worker_id():
    return int(os.environ["HORA_ELASTIC_WORKER"])


def mark_started(out):
    with open(os.path.join(out, f"started-{worker_id()}-{os.getpid()}"), "w"):
        pass


def write_result(out, result):
    """Writes ``result`` with this process's pid and the job's rank, size and generation."""
    from hora import _core

    result = {
        "pid": os.getpid(),
        "rank": _core.rank(),
        "size": _core.size(),
        "generation": _core.elastic_generation(),
        **result,
    }
    with open(os.path.join(out, f"worker{worker_id()}.json"), "w") as f:
        json.dump(result, f)
