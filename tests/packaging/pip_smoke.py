"""A user's first hora program, run by pip_install_test.sh under horarun -np N.

Imports the installed hora, checks it was imported from where the install under test put it
(argv[1], a path prefix), that its version is the package's and that it carries the py.typed
marker (PEP 561: type checkers read its annotations), then sums
x[i] = (rank + 1) * i over every rank and compares exactly. Prints
"pip_smoke: rank R of N ok" on success; raises otherwise.
"""

import sys
from importlib import metadata, resources

import numpy as np

import hora

expected_prefix = sys.argv[1]
if not hora.__file__.startswith(expected_prefix):
    raise SystemExit(
        f"pip_smoke: hora imported from {hora.__file__}, expected under {expected_prefix}"
    )
version = metadata.version("hora")
if not resources.files("hora").joinpath("py.typed").is_file():
    raise SystemExit(f"pip_smoke: the installed hora ({hora.__file__}) has no py.typed marker")

hora.init()
rank, size = hora.rank(), hora.size()
x = np.arange(1000, dtype=np.float32) * (rank + 1)
y = hora.allreduce(x, name="pip_smoke.x", op=hora.Sum)
expected = np.arange(1000, dtype=np.float32) * (size * (size + 1) // 2)
if not np.array_equal(np.asarray(y), expected):
    raise SystemExit(
        f"pip_smoke: rank {rank}: allreduce gave {np.asarray(y)[:4]}..., expected {expected[:4]}..."
    )
hora.shutdown()
print(f"pip_smoke: rank {rank} of {size} ok (hora {version} from {hora.__file__})")
