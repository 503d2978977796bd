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

namespace {

std::string_view Kind(std::string_view model) { return model.substr(0, model.find(':')); }

}  // namespace

std::vector<EfficiencyTable> BuiltInEfficiencies() {
  std::vector<EfficiencyTable> tables(3);
  // EFFICIENCY-TABLE-BEGIN mlp:128 256: share/dmlps/advise-efficiency.sh's output.
  tables[0].rows = {
      {"bsp", 1.00, 1.00},       // 180 and 180 iterations
      {"backup:1", 1.28, 1.28},  // 230 and 230 iterations
      {"ssp:3", 16.67, 3.94},    // 3000+ and 710 iterations
      {"wbsp", 7.11, 0.56},      // 1280 and 100 iterations
      {"abps", 1.00, 1.33},      // 180 and 240 iterations
      {"lbbsp", 1.00, 1.11},     // 180 and 200 iterations
  };
  tables[0].provenance =
      "share/dmlps/advise-efficiency.sh: dmlps-bench sim, 4 workers, mlp:128 on fashion-mnist, "
      "batch 256, lr 0.1, target 0.85, even and 1,1,1,4; 2026-11-25, commit 022332b";
  // EFFICIENCY-TABLE-END
  // EFFICIENCY-TABLE-BEGIN softmax 256: MODEL=softmax TARGET=0.8 advise-efficiency.sh
  tables[1].model = "softmax";
  tables[1].rows = {
      {"bsp", 1.00, 1.00},       // 50 and 50 iterations
      {"backup:1", 1.00, 1.00},  // 50 and 50 iterations
      {"ssp:3", 13.20, 4.80},    // 660 and 240 iterations
      {"wbsp", 14.40, 1.00},     // 720 and 50 iterations
      {"abps", 1.00, 1.00},      // 50 and 50 iterations
      {"lbbsp", 1.00, 1.00},     // 50 and 50 iterations
  };
  tables[1].provenance =
      "MODEL=softmax TARGET=0.8 share/dmlps/advise-efficiency.sh: dmlps-bench sim, 4 workers, "
      "softmax on fashion-mnist, batch 256, lr 0.1, target 0.8, even and 1,1,1,4; 2026-11-25, "
      "commit 4626fa6";
  // EFFICIENCY-TABLE-END
  // EFFICIENCY-TABLE-BEGIN softmax 16: MODEL=softmax TARGET=0.8 advise-efficiency.sh -- --batch 16
  tables[2].model = "softmax";
  tables[2].batch = 16;
  tables[2].rows = {
      {"bsp", 1.00, 1.00},       // 240 and 240 iterations
      {"backup:1", 1.00, 1.00},  // 240 and 240 iterations
      {"ssp:3", 1.92, 1.12},     // 460 and 270 iterations
      {"wbsp", 2.88, 1.50},      // 690 and 360 iterations
      {"abps", 1.00, 0.75},      // 240 and 180 iterations
      {"lbbsp", 1.00, 0.75},     // 240 and 180 iterations
  };
  tables[2].provenance =
      "MODEL=softmax TARGET=0.8 share/dmlps/advise-efficiency.sh -- --batch 16: dmlps-bench sim, "
      "4 workers, softmax on fashion-mnist, batch 16, lr 0.1, target 0.8, even and 1,1,1,4; "
      "2026-11-25, commit 9114dbe";
  // EFFICIENCY-TABLE-END
  return tables;
}

EfficiencyTable BuiltInEfficiency(std::string_view model, int64_t batch) {
  std::vector<EfficiencyTable> tables = BuiltInEfficiencies();
  const EfficiencyTable* best = nullptr;
  double best_distance = 0;
  for (const EfficiencyTable& t : tables) {
    if (Kind(t.model) != Kind(model)) continue;
    const double distance =
        batch > 0 ? std::abs(std::log(static_cast<double>(t.batch) / static_cast<double>(batch)))
                  : -static_cast<double>(t.batch);
    if (best == nullptr || distance < best_distance) {
      best = &t;
      best_distance = distance;
    }
  }
  return best != nullptr ? *best : tables.front();
}

}  // namespace dmlps::advise
