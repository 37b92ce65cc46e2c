"""The exceptions hora raises: one class per error code of the C++ core, all under HoraError.

Every collective that fails raises on every rank where the engine reports it, with a message
that names the tensor, the ranks and the values (for example ``tensor 'fc1.weight': allreduce
shape [4,5] on rank 0 but [4,6] on rank 1``).
"""

from __future__ import annotations


class HoraError(RuntimeError):
    """Base class of every error hora raises."""


class InvalidArgumentError(HoraError, ValueError):
    """Bad input: an unsupported dtype or device, a non-contiguous tensor, a bad setting."""


class FailedPreconditionError(HoraError):
    """Wrong call order: before init() or after shutdown(), a misused optimizer."""


class MismatchError(HoraError):
    """Ranks asked for different things under one tensor name (dtype, shape, op, root)."""


class HorovodInternalError(HoraError):
    """Horovod's name for a collective that failed because of a peer: the base of RemoteError
    (the peer failed or left) and HoraTimeoutError (it did not answer within the deadline).
    hora.elastic.run catches it, restores the last commit and goes on with the survivors."""


class HoraTimeoutError(HorovodInternalError, TimeoutError):
    """A deadline (HORA_TIMEOUT_S) passed while waiting on a peer; the message names the
    rank(s) waited for."""


class RemoteError(HorovodInternalError):
    """A peer failed or left the job; the message names the rank."""


class HoraIOError(HoraError, OSError):
    """A system call or the network failed."""


class UnimplementedError(HoraError, NotImplementedError):
    """The backend lacks this operation."""


class InternalError(HoraError):
    """A bug in hora surfaced as an error."""
