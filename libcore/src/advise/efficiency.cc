// The statistical-efficiency table compiled in, and its look-up.
#include "dmlps/advise/efficiency.h"

#include <algorithm>
#include <cmath>

namespace dmlps::advise {

std::optional<Efficiency> EfficiencyTable::Find(std::string_view policy) const {
  for (const Efficiency& row : rows) {
    if (row.policy == policy) return row;
  }
  // Else the row of the same policy with another parameter ("ssp:7": ssp:3's).
  const std::string_view name = policy.substr(0, policy.find(':'));
  for (const Efficiency& row : rows) {
    if (std::string_view(row.policy).substr(0, row.policy.find(':')) == name) return row;
  }
  return std::nullopt;
}

double EfficiencyAt(const Efficiency& row, double ratio, double straggler_ratio) {
  if (!(ratio > 1) || !(straggler_ratio > 1) || !(row.even > 0) || !(row.straggler > 0)) {
    return row.even;
  }
  const double t = std::min(1.0, std::log(ratio) / std::log(straggler_ratio));
  return std::exp((1 - t) * std::log(row.even) + t * std::log(row.straggler));
}

EfficiencyTable BuiltInEfficiency() {
  EfficiencyTable table;
  // EFFICIENCY-TABLE-BEGIN: share/dmlps/advise-efficiency.sh's output.
  table.rows = {
      {"bsp", 1.00, 1.00},       // 180 and 180 iterations
      {"backup:1", 1.28, 1.28},  // 230 and 230 iterations
      {"ssp:3", 16.67, 3.94},    // 3000+ and 710 iterations
      {"wbsp", 7.11, 0.56},      // 1280 and 100 iterations
      {"abps", 1.00, 1.33},      // 180 and 240 iterations
      {"lbbsp", 1.00, 1.11},     // 180 and 200 iterations
  };
  table.provenance =
      "share/dmlps/advise-efficiency.sh: dmlps-bench sim, 4 workers, mlp:128 on fashion-mnist, "
      "batch 256, lr 0.1, target 0.85, even and 1,1,1,4; 2026-11-25, commit 022332b";
  // EFFICIENCY-TABLE-END
  return table;
}

}  // namespace dmlps::advise
