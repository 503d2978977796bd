// Federated averaging (McMahan et al., "Communication-Efficient Learning of
// Deep Networks from Decentralized Data", AISTATS 2017), every worker taking
// part in every round: local SGD whose server replaces the model by the
// workers' sample-weighted mean, with no outer optimizer of its own
// (docs/algorithms-local-sgd.md, "FedAvg").
#ifndef DMLPS_SYNC_FEDAVG_H_
#define DMLPS_SYNC_FEDAVG_H_

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// fedavg runs synchronous local SGD's rounds (sync/localsgd.h: a BspPolicy,
// named "fedavg") with the outer optimizer fixed at plain averaging: SGD of
// learning rate 1 without momentum on the mean pseudo-gradient, so that a
// round's model is the mean of the workers' copies.

// The settings fedavg refuses, and every policy of its rounds
// (post-localsgd): fewer than 1 local step, or an outer optimizer other
// than plain averaging (outer_lr 1, outer_momentum 0). The message names
// config.name.
Status CheckFedAvg(const PolicyConfig& config);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_FEDAVG_H_
