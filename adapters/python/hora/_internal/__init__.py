"""What hora's Python APIs share: hora (NumPy and any DLPack tensor), hora.torch,
hora.tensorflow and hora.keras. Nothing here is public API; the names are internal by this
package's name.

The rule this package serves: no module of hora imports another module's private
(underscore) name. What two modules need is written once, here, under a plain name. The
underscore modules elsewhere are private to their own package and imported only inside hora:
hora._core (the binding), hora._numpy_alloc, hora.torch._tensors and hora.tensorflow._library.

- reduce_ops: hora.Average, Sum, Min, Max, Product and Horovod's Adasum.
- api: the names hora, hora.torch and hora.tensorflow all export (the runtime: init, rank,
  size, ...; the errors; Compression; the reduce ops). Each takes them with
  ``from hora._internal.api import *``, so the list is written once.
- args: checking and converting the arguments every API's collectives take alike: the reduce
  op (with Horovod's deprecated ``average`` flag), the scale factors, the compression, tensor
  names and a group's member names.
- objects: broadcast_object and allgather_object, over hora's NumPy collectives, with the
  framework's serialisation passed in.
- tensorflow: running hora's TensorFlow ops so that eagerly a failure raises the hora.errors
  class. It imports TensorFlow, so only hora.tensorflow and hora.keras import it.
"""
