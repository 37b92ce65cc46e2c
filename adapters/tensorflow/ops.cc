// The op definitions of hora.tensorflow (their kernels: collective_kernels.cc,
// reducer_kernels.cc). Every op runs on the CPU; the Python wrappers in
// adapters/python/hora/tensorflow/mpi_ops.py are the public API.
//
// Naming (tensor_name, name_from_node): the collective's name across ranks is tensor_name;
// when it is empty and name_from_node is true it is the op's node name (unique in its graph
// and the same on every rank that builds the same graph, Horovod's rule); when both are
// unset (eager calls without a name) hora numbers the call (call order must then match).
//
// Process sets: every collective op runs on the set whose id is its process_set_id attr (0:
// the global set, Horovod's attr); only the set's members may run it.
//
// Every op is stateful: a collective must run at every call, with the other ranks, so
// TensorFlow must neither fold it into a constant at graph-optimisation time (grappler folds
// stateless ops whose inputs are constants, running the kernel once) nor merge two identical
// ones. TensorFlow's automatic control dependencies would then chain stateful ops in program
// order, each waiting for the previous one to complete, which would stop collectives from
// being in flight together; hora/tensorflow/mpi_ops.py registers a resolver that exempts the
// collectives (not barrier and join, which keep program order).
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace hora {
namespace tf_ops {
namespace {

using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

// The dtypes TensorFlow and hora share.
#define HORA_TF_TYPES \
  "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"

absl::Status same_shape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// Output i is shaped like input i (the list ops).
absl::Status same_shapes(InferenceContext* c) {
  for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
  return absl::OkStatus();
}

// The first dimension becomes unknown (it depends on the other ranks).
absl::Status unknown_first_dim(InferenceContext* c) {
  ShapeHandle in = c->input(0);
  if (!c->RankKnown(in)) {
    c->set_output(0, c->UnknownShape());
    return absl::OkStatus();
  }
  if (c->Rank(in) == 0)
    return absl::InvalidArgumentError("hora: the tensor must have at least one dimension");
  ShapeHandle out;
  TF_RETURN_IF_ERROR(c->ReplaceDim(in, 0, c->UnknownDim(), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("HoraAllreduce")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: " HORA_TF_TYPES)
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("compression: int = 0")
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensor: T")
    .Output("reduced: T")
    .SetShapeFn(same_shape)
    .Doc("reduced = postscale * reduce_op over ranks (prescale * tensor).");

REGISTER_OP("HoraGroupedAllreduce")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: list(" HORA_TF_TYPES ")")
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("compression: int = 0")
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensors: T")
    .Output("reduced: T")
    .SetShapeFn(same_shapes)
    .Doc("Allreduces of a list of tensors, fused as one unit (names tensor_name.<i>).");

REGISTER_OP("HoraAllgather")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: " HORA_TF_TYPES)
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensor: T")
    .Output("gathered: T")
    .SetShapeFn(unknown_first_dim)
    .Doc("Every rank's tensor concatenated along the first dimension.");

REGISTER_OP("HoraBroadcast")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: " HORA_TF_TYPES)
    .Attr("root_rank: int")
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensor: T")
    .Output("broadcast: T")
    .SetShapeFn(same_shape)
    .Doc("root_rank's tensor, on every rank.");

REGISTER_OP("HoraAlltoall")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: " HORA_TF_TYPES)
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensor: T")
    .Input("splits: int64")
    .Output("received: T")
    .Output("received_splits: int64")
    .SetShapeFn([](InferenceContext* c) {
      TF_RETURN_IF_ERROR(unknown_first_dim(c));
      c->set_output(1, c->Vector(c->UnknownDim()));
      return absl::OkStatus();
    })
    .Doc("splits[p] first-dimension rows go to rank p (empty splits: an even split).");

REGISTER_OP("HoraReducescatter")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Attr("T: " HORA_TF_TYPES)
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("tensor_name: string = ''")
    .Attr("name_from_node: bool = true")
    .Input("tensor: T")
    .Output("reduced: T")
    .SetShapeFn(unknown_first_dim)
    .Doc(
        "This rank's block of postscale * reduce_op over ranks (prescale * tensor) along the "
        "first dimension.");

REGISTER_OP("HoraBarrier")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .SetShapeFn(::tensorflow::shape_inference::NoOutputs)
    .Doc("Completes once every rank of the process set ran it.");

REGISTER_OP("HoraJoin")
    .SetIsStateful()
    .Attr("process_set_id: int = 0")
    .Output("last_joined: int32")
    .SetShapeFn(::tensorflow::shape_inference::ScalarShape)
    .Doc("This rank has no more data; the last rank of the process set to join.");

// Not named "...Enqueue...": grappler takes every op whose name holds "Enqueue" for a queue
// enqueue, and its shape inference then gives up on the graph.
REGISTER_OP("HoraReducerGradientReady")
    .SetIsStateful()
    .Attr("T: " HORA_TF_TYPES)
    .Attr("reducer_id: int")
    .Attr("index: int")
    .Input("gradient: T")
    .Output("pending: T")
    .SetShapeFn(same_shape)
    .Doc(
        "Hands parameter `index`'s gradient to gradient reducer `reducer_id`, which starts "
        "its allreduce in `pending`; only HoraReducerSynchronize may read `pending`.");

REGISTER_OP("HoraReducerSynchronize")
    .SetIsStateful()
    .Attr("T: list(" HORA_TF_TYPES ")")
    .Attr("reducer_id: int")
    .Input("pending: T")
    .Output("reduced: T")
    .SetShapeFn(same_shapes)
    .Doc("Waits for every allreduce of the reducer's step; reduced[i] is pending[i], reduced.");

}  // namespace tf_ops
}  // namespace hora
