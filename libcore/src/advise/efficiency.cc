// The statistical-efficiency table compiled in, and its look-up.
#include "dmlps/advise/efficiency.h"

#include <algorithm>
#include <cmath>
#include <utility>

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

double EfficiencyUnder(const Efficiency& row, double ratio, double delay_cost,
                       double straggler_ratio) {
  const double mixed = EfficiencyAt(row, ratio, straggler_ratio);
  if (!(delay_cost > 0) || !(row.delays > 0) || !(mixed > 0)) return mixed;
  const double t = std::min(1.0, std::log1p(delay_cost) / std::log(2.0));
  return std::exp((1 - t) * std::log(mixed) + t * std::log(row.delays));
}

namespace {

std::string_view Kind(std::string_view model) { return model.substr(0, model.find(':')); }

double LogDistance(int64_t a, int64_t b) {
  return std::abs(std::log(static_cast<double>(a) / static_cast<double>(b)));
}

}  // namespace

std::vector<EfficiencyTable> BuiltInEfficiencies() {
  std::vector<EfficiencyTable> tables(5);
  // EFFICIENCY-TABLE-BEGIN mlp:128 256: learned from real runs where there are some
  // (share/dmlps/experiments/auto-profiles.sh --efficiency over four sittings), else
  // from the simulator (advise-efficiency.sh: wbsp and abps).
  tables[0].rows = {
      {"bsp", 1.00, 1.00, 1.00},       // 197 (12), 206 (12), 210 (12) iterations (runs)
      {"backup:1", 1.15, 1.12, 1.02},  // 226 (12), 231 (12), 215 (12) iterations (runs)
      {"backup:2", 1.17, 1.30, 1.22},  // 257 (6), 287 (6), 268 (6) iterations (runs)
      {"backup:3", 1.75, 1.76, 1.78},  // 385 (6), 387 (6), 392 (6) iterations (runs)
      {"ssp:3", 14.30, 2.46, 5.03},    // 2812 (12), 506 (12), 1057 (12) iterations (runs)
      {"wbsp", 3.65, 0.43, 1.09},      // 840, 100 and 250 iterations (simulated)
      {"abps", 1.00, 1.04, 0.83},      // 230, 240 and 190 iterations (simulated)
      {"lbbsp", 1.00, 0.98, 1.00},     // 197 (12), 202 (12), 211 (12) iterations (runs)
  };
  tables[0].provenance =
      "bsp, backup:1, ssp:3, lbbsp: real runs, the means of 12 each (4 sittings of "
      "share/dmlps/experiments/auto-profiles.sh --repeat 3, 2026-11-25 to 11-29; "
      "auto-profiles.sh --efficiency), 4 workers on one 2-core host, mlp:128 on fashion-mnist, "
      "batch 256, lr 0.1, target 0.85, evaluated every 10 iterations, even, 1,1,1,4 and delays "
      "50 ms at 0.2; backup:2, backup:3: two sittings of the same job summing in rank order "
      "(dmlps-bench run --deterministic, seeds 1-3), every snapshot evaluated (cb3a31e), "
      "2026-12-05, over BSP's means in them (220 iterations, 6 runs each; auto-profiles.sh "
      "--efficiency over them); wbsp, abps: share/dmlps/advise-efficiency.sh, "
      "dmlps-bench sim, the same job (2026-11-25, commit 9e25a5c)";
  // EFFICIENCY-TABLE-END
  // auto's runs of this job (the twenty-third and twenty-fourth sittings of
  // docs/auto-goals-december-5.md, 36 runs over the six profiles) all left
  // backup:1, for backup:2 (30) or backup:3 (6), at iteration 10-157; until
  // then their rounds took 1.2-2.7x the time of those after the move.
  tables[0].auto_start = "backup:2";
  // EFFICIENCY-TABLE-BEGIN softmax 256: MODEL=softmax TARGET=0.8 advise-efficiency.sh
  tables[1].model = "softmax";
  tables[1].rows = {
      {"bsp", 1.00, 1.00, 1.00},       // 50, 50 and 50 iterations
      {"backup:1", 1.00, 1.00, 1.40},  // 50, 50 and 70 iterations
      {"ssp:3", 13.20, 4.80, 2.60},    // 660, 240 and 130 iterations
      {"wbsp", 14.40, 0.80, 0.40},     // 720, 40 and 20 iterations
      {"abps", 1.00, 1.00, 1.00},      // 50, 50 and 50 iterations
      {"lbbsp", 1.00, 1.00, 1.00},     // 50, 50 and 50 iterations
  };
  tables[1].provenance =
      "MODEL=softmax TARGET=0.8 share/dmlps/advise-efficiency.sh: dmlps-bench sim, 4 workers, "
      "softmax on fashion-mnist, batch 256, lr 0.1, target 0.8, even, 1,1,1,4 and delays 50 ms "
      "at 0.2; 2026-11-25, commit 9e25a5c";
  // EFFICIENCY-TABLE-END
  // EFFICIENCY-TABLE-BEGIN softmax 16: MODEL=softmax TARGET=0.8 advise-efficiency.sh -- --batch 16
  tables[2].model = "softmax";
  tables[2].batch = 16;
  tables[2].rows = {
      {"bsp", 1.00, 1.00, 1.00},       // 240, 240 and 240 iterations
      {"backup:1", 1.00, 1.00, 0.96},  // 240, 240 and 230 iterations
      {"ssp:3", 1.92, 1.12, 1.67},     // 460, 270 and 400 iterations
      {"wbsp", 2.88, 1.08, 0.29},      // 690, 260 and 70 iterations
      {"abps", 1.00, 0.75, 0.58},      // 240, 180 and 140 iterations
      {"lbbsp", 1.00, 0.75, 0.88},     // 240, 180 and 210 iterations
  };
  tables[2].provenance =
      "MODEL=softmax TARGET=0.8 share/dmlps/advise-efficiency.sh -- --batch 16: dmlps-bench sim, "
      "4 workers, softmax on fashion-mnist, batch 16, lr 0.1, target 0.8, even, 1,1,1,4 and "
      "delays 50 ms at 0.2; 2026-11-25, commit 9e25a5c";
  // EFFICIENCY-TABLE-END
  // EFFICIENCY-TABLE-BEGIN softmax 16, 16 workers: MODEL=softmax TARGET=0.8 WORKERS=16 ...
  tables[3].model = "softmax";
  tables[3].batch = 16;
  tables[3].workers = 16;
  tables[3].rows = {
      {"bsp", 1.00, 1.00, 1.00},       // 80, 80 and 80 iterations
      {"backup:1", 1.00, 1.00, 1.00},  // 80, 80 and 80 iterations
      {"ssp:3", 6.62, 1.62, 1.25},     // 530, 130 and 100 iterations
      {"wbsp", 7.50, 6.25, 0.38},      // 600, 500 and 30 iterations
      {"abps", 1.00, 1.00, 1.00},      // 80, 80 and 80 iterations
      {"lbbsp", 1.00, 0.62, 1.00},     // 80, 50 and 80 iterations
  };
  tables[3].provenance =
      "MODEL=softmax TARGET=0.8 WORKERS=16 share/dmlps/advise-efficiency.sh -- --batch 16: "
      "dmlps-bench sim, 16 workers, softmax on fashion-mnist, batch 16, lr 0.1, target 0.8, "
      "even, the last 4x slow and delays 50 ms at 0.2; 2026-11-25, commit 9e25a5c";
  // EFFICIENCY-TABLE-END
  // EFFICIENCY-TABLE-BEGIN softmax 16, 256 workers: POLICIES=bsp,backup:1,ssp:3,lbbsp
  // MODEL=softmax TARGET=0.8 WORKERS=256 advise-efficiency.sh -- --batch 16 (auto's candidates)
  tables[4].model = "softmax";
  tables[4].batch = 16;
  tables[4].workers = 256;
  tables[4].rows = {
      {"bsp", 1.00, 1.00, 1.00},       // 50, 50 and 50 iterations
      {"backup:1", 1.00, 1.00, 1.00},  // 50, 50 and 50 iterations
      {"ssp:3", 14.40, 10.80, 1.40},   // 720, 540 and 70 iterations
      {"lbbsp", 1.00, 1.00, 1.00},     // 50, 50 and 50 iterations
  };
  tables[4].provenance =
      "POLICIES=bsp,backup:1,ssp:3,lbbsp MODEL=softmax TARGET=0.8 WORKERS=256 "
      "share/dmlps/advise-efficiency.sh -- --batch 16: dmlps-bench sim, 256 workers, softmax on "
      "fashion-mnist, batch 16, lr 0.1, target 0.8, even, the last 4x slow and delays 50 ms at "
      "0.2; 2026-11-25, commit 9e25a5c";
  // EFFICIENCY-TABLE-END
  return tables;
}

EfficiencyTable BuiltInEfficiency(std::string_view model, int64_t batch, int64_t workers) {
  std::vector<EfficiencyTable> tables = BuiltInEfficiencies();
  const EfficiencyTable* best = nullptr;
  std::pair<double, double> best_distance;
  for (const EfficiencyTable& t : tables) {
    if (Kind(t.model) != Kind(model)) continue;
    // Nearest batch first, then nearest number of workers.
    const std::pair<double, double> distance = {
        batch > 0 ? LogDistance(t.batch, batch) : -static_cast<double>(t.batch),
        workers > 0 ? LogDistance(t.workers, workers) : 0};
    if (best == nullptr || distance < best_distance) {
      best = &t;
      best_distance = distance;
    }
  }
  return best != nullptr ? *best : tables.front();
}

}  // namespace dmlps::advise
