// Making ranks agree before training, and agreeing on metrics during it: broadcast of
// parameters and optimizer state from one root rank (so ranks started from different seeds,
// or only the root restored from a checkpoint, continue identically), and metric averaging.
//
// Every rank must call each function with the same names in the same layout (the engine
// fails a mismatch on every rank with kMismatch). Each blocks until its collectives
// completed: at most HORA_TIMEOUT_S per tensor. REQUIRES: hora::init returned OK.
// Threads: any one thread per call; names must not collide with collectives in flight.
#pragma once

#include <string>
#include <vector>

#include "hora/optimizer.h"
#include "hora/process_set.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {

// Overwrites every parameter's value with root's ("broadcast/param/<name>"). kInvalidArgument
// when root is not in [0, size()). With a process set (hora/process_set.h), among its members
// only; root is a global rank and must be a member.
Status broadcast_parameters(const std::vector<Parameter>& params, int root,
                            int process_set = kGlobalProcessSet);
// Overwrites the optimizer's state (Optimizer::state()) with root's
// ("broadcast/state/<name>"), e.g. momentum, Adam moments and step count.
Status broadcast_optimizer_state(Optimizer& optimizer, int root,
                                 int process_set = kGlobalProcessSet);
// Broadcasts any list of state views (both functions above use it).
Status broadcast_state_tensors(const std::vector<StateTensor>& tensors, const std::string& prefix,
                               int root, int process_set = kGlobalProcessSet);

// Reduces `values` across ranks in float64 under one collective name ("metric/<name>") and
// returns the result (kAverage: the mean of the ranks' values; kSum: their sum).
StatusOr<std::vector<double>> allreduce_metrics(const std::string& name, std::vector<double> values,
                                                ReduceOp op = ReduceOp::kAverage,
                                                int process_set = kGlobalProcessSet);
// The mean of `value` over the ranks (of the process set).
StatusOr<double> average_metric(const std::string& name, double value,
                                int process_set = kGlobalProcessSet);

}  // namespace hora
