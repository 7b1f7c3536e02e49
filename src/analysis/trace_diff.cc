#include "analysis/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "analysis/mann_whitney.h"
#include "analysis/stats.h"
#include "analysis/trace_diff_stats.h"
#include "format/payloads.h"

namespace strata::analysis {
namespace {

// One side's steps, pooled over its recordings (step k of recording r is offset(r) + k); per item, its
// entries in the pooled steps it ran in (sparse, in step order), capped.
struct PooledItem {
  const StepItem* any = nullptr;  // level, name, ... (shapes and module as keyed)
  std::string shapes, module;
  std::vector<uint32_t> at;
  std::vector<double> ns;
  double sum_ns = 0, sum_calls = 0;
};

struct Side {
  // work: per step, the main thread's items and the time between its ops, each capped (cap_excursions);
  // wall: the steps' wall time as recorded.
  std::vector<std::vector<double>> work_by_recording, wall_by_recording, device_by_recording;
  std::vector<double> work_ns, wall_ns, device_ns;
  std::map<std::string, PooledItem> items;
  bool has_device = false;
  size_t warmup_dropped = 0, capped = 0;
  uint64_t outside = 0, other_process = 0;
  std::vector<size_t> offsets;  // each recording's first pooled step
  size_t steps() const { return wall_ns.size(); }
};

bool any_text(const std::vector<RecordingSteps>& side, std::string StepItem::*field) {
  for (const RecordingSteps& r : side)
    for (const StepItem& i : r.items)
      if (!(i.*field).empty()) return true;
  return false;
}

// A recording's per-step values of one quantity (an item's time, the step time) with the long
// excursions capped: on a loaded machine the scheduler takes the CPU for a tick (4 ms here) in one
// step or another, inside whichever op runs then, and the mean of an op's time over the steps moves by
// a share of that tick as chance lands it. Values above the median by more than kCapMads (scaled)
// deviations are set to that bound; the deviation is that of the values below the median (the
// excursions only add time, and an op that runs a third of the step is hit in a third of the steps or
// more, which would widen a two-sided one). Only for a quantity with time in at least kCapMinPresence
// of the steps (for one in fewer the median says nothing). Returns the values capped.
size_t cap_excursions(std::vector<double>& v) {
  size_t present = 0;
  for (double x : v) present += x > 0;
  if (v.empty() || static_cast<double>(present) < kCapMinPresence * static_cast<double>(v.size())) return 0;
  const double mid = median(v);
  std::vector<double> below;
  for (double x : v)
    if (x <= mid) below.push_back(mid - x);
  const double limit = mid + kCapMads * 1.4826 * std::max(median(below), 0.01 * mid);
  size_t capped = 0;
  for (double& x : v)
    if (x > limit) x = limit, ++capped;
  return capped;
}

// An item's entries in one recording of `steps` steps, capped (cap_excursions on the values written
// out, which only an item present in most steps is: the written-out vector stays within 1/kCapMinPresence
// of its entries).
size_t cap_entries(const StepItem& item, size_t steps, std::vector<double>* capped) {
  *capped = item.ns;
  if (static_cast<double>(item.steps.size()) < kCapMinPresence * static_cast<double>(steps)) return 0;
  std::vector<double> dense(steps, 0.0);
  for (size_t e = 0; e < item.steps.size(); ++e)
    if (item.steps[e] < steps) dense[item.steps[e]] = item.ns[e];
  const size_t n = cap_excursions(dense);
  for (size_t e = 0; e < item.steps.size(); ++e)
    if (item.steps[e] < steps) (*capped)[e] = dense[item.steps[e]];
  return n;
}

// Puts a pooled item's entries back in step order, one per step.
void merge_entries(PooledItem& p) {
  std::vector<size_t> order(p.at.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p.at[x] < p.at[y]; });
  std::vector<uint32_t> at;
  std::vector<double> ns;
  for (size_t k : order) {
    if (!at.empty() && at.back() == p.at[k]) {
      ns.back() += p.ns[k];
      continue;
    }
    at.push_back(p.at[k]);
    ns.push_back(p.ns[k]);
  }
  p.at = std::move(at);
  p.ns = std::move(ns);
}

Side pool(const std::vector<RecordingSteps>& recordings, bool use_shapes, bool use_module) {
  Side side;
  std::string key;
  std::vector<double> capped;
  for (const RecordingSteps& r : recordings) {
    const size_t offset = side.wall_ns.size(), steps = r.step_ns.size();
    side.offsets.push_back(offset);
    side.wall_by_recording.push_back(r.step_ns);
    side.device_by_recording.push_back(r.device_ns);
    side.wall_ns.insert(side.wall_ns.end(), r.step_ns.begin(), r.step_ns.end());
    side.device_ns.insert(side.device_ns.end(), r.device_ns.begin(), r.device_ns.end());
    std::vector<double>& work = side.work_by_recording.emplace_back(steps, 0.0);
    side.has_device = side.has_device || r.has_device;
    side.warmup_dropped += r.warmup_dropped;
    side.outside += r.items_outside_steps;
    side.other_process += r.other_process_spans;
    for (const StepItem& i : r.items) {
      const std::string shapes = use_shapes ? i.shapes : std::string(),
                        module = use_module ? i.module : std::string();
      key.assign(1, static_cast<char>(i.level));
      key.append(1, i.device ? 'd' : 'h')
          .append(i.name)
          .append(1, '\x1f')
          .append(shapes)
          .append(1, '\x1f')
          .append(module);
      auto [it, fresh] = side.items.try_emplace(key);
      PooledItem& p = it->second;
      if (fresh) {
        p.any = &i;
        p.shapes = shapes;
        p.module = module;
      }
      side.capped += cap_entries(i, steps, &capped);
      // Items merged by a relaxed key (no shapes) may share a step: entries stay in step order.
      const size_t before = p.at.size();
      for (size_t e = 0; e < i.steps.size(); ++e) {
        if (i.steps[e] >= steps) continue;
        p.at.push_back(static_cast<uint32_t>(offset + i.steps[e]));
        p.ns.push_back(capped[e]);
        p.sum_ns += capped[e];
        p.sum_calls += i.calls[e];
        if (!i.device) work[i.steps[e]] += std::max(0.0, capped[e] - i.parallel_ns[e]);
      }
      if (before > 0 && p.at.size() > before && p.at[before - 1] >= p.at[before]) merge_entries(p);
    }
    side.work_ns.insert(side.work_ns.end(), work.begin(), work.end());
  }
  return side;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

struct Pair {
  const PooledItem* base = nullptr;
  const PooledItem* next = nullptr;
};

DiffItem item_of(const PooledItem* base, const PooledItem* next, size_t base_steps, size_t new_steps) {
  const PooledItem& any = base ? *base : *next;
  DiffItem item;
  item.level = any.any->level;
  item.device = any.any->device;
  item.name = any.any->name;
  item.shapes = any.shapes;
  item.module = any.module;
  item.status = base && next ? DiffStatus::kMatched : base ? DiffStatus::kRemoved : DiffStatus::kAdded;
  auto per_step = [](double sum, size_t steps) { return steps ? sum / static_cast<double>(steps) : 0.0; };
  item.base_ns = base ? per_step(base->sum_ns, base_steps) : 0;
  item.new_ns = next ? per_step(next->sum_ns, new_steps) : 0;
  item.base_count = base ? per_step(base->sum_calls, base_steps) : 0;
  item.new_count = next ? per_step(next->sum_calls, new_steps) : 0;
  return item;
}

// An item only in BASE and one only in NEW that differ only in their shapes are one item whose shapes
// changed: paired when their (level, name, module) group has as many of one as of the other, by time.
void pair_shape_changes(std::vector<DiffItem>& items, std::vector<Pair>& pairs) {
  std::map<std::tuple<uint8_t, bool, std::string, std::string>,
           std::pair<std::vector<size_t>, std::vector<size_t>>>
      groups;
  for (size_t n = 0; n < items.size(); ++n) {
    const DiffItem& i = items[n];
    if (i.status == DiffStatus::kMatched) continue;
    auto& g = groups[{i.level, i.device, i.name, i.module}];
    (i.status == DiffStatus::kRemoved ? g.first : g.second).push_back(n);
  }
  std::vector<char> merged(items.size(), 0);
  for (auto& [key, g] : groups) {
    auto& [removed, added] = g;
    if (removed.empty() || removed.size() != added.size()) continue;
    auto by_time = [&](std::vector<size_t>& v) {
      std::sort(v.begin(), v.end(), [&](size_t x, size_t y) {
        return std::max(items[x].base_ns, items[x].new_ns) > std::max(items[y].base_ns, items[y].new_ns);
      });
    };
    by_time(removed);
    by_time(added);
    for (size_t k = 0; k < removed.size(); ++k) {
      DiffItem& r = items[removed[k]];
      const DiffItem& a = items[added[k]];
      r.status = DiffStatus::kShapeChanged;
      r.new_shapes = a.shapes;
      r.new_ns = a.new_ns;
      r.new_count = a.new_count;
      pairs[removed[k]].next = pairs[added[k]].next;
      merged[added[k]] = 1;
    }
  }
  size_t out = 0;
  for (size_t n = 0; n < items.size(); ++n) {
    if (merged[n]) continue;
    if (out != n) {
      items[out] = std::move(items[n]);
      pairs[out] = pairs[n];
    }
    ++out;
  }
  items.resize(out);
  pairs.resize(out);
}

// Per item: its change beyond its factor as a share of the step (device) time, and a U test of its
// per-step times against BASE's x factor; Benjamini-Hochberg over every item tested.
// An item's mean per step in each recording of a side (its steps pooled in recording order); zeros when
// the side does not have it.
std::vector<double> recording_means(const PooledItem* item, const Side& side) {
  std::vector<double> sum(side.offsets.size(), 0.0), out;
  for (size_t e = 0; item && e < item->at.size(); ++e) {
    const size_t r =
        static_cast<size_t>(std::upper_bound(side.offsets.begin(), side.offsets.end(), item->at[e]) -
                            side.offsets.begin()) -
        1;
    sum[r] += item->ns[e];
  }
  for (size_t r = 0; r < sum.size(); ++r)
    if (!side.wall_by_recording[r].empty())
      out.push_back(sum[r] / static_cast<double>(side.wall_by_recording[r].size()));
  return out;
}

// Every recording of NEW above every recording of BASE x factor by more than min_gap_ns per step:
// two processes of one program can differ per op for their whole lives (docs/diff.md, "Limits"),
// which the steps of one recording cannot show and several recordings a side can. The gap is the
// threshold's, not zero: one NEW process in glibc's slow malloc regime moved a pooled mean beyond
// the threshold while its two siblings were 6% slower on one op, above every BASE process by a hair
// (docs/diff.md, "The gate's rates"). With one recording a side it is the pooled rule itself.
bool recordings_apart(const PooledItem* base, const PooledItem* next, double factor, double min_gap_ns,
                      const Side& a, const Side& b) {
  const std::vector<double> ma = recording_means(base, a), mb = recording_means(next, b);
  if (ma.empty() || mb.empty()) return false;
  return *std::min_element(mb.begin(), mb.end()) - factor * *std::max_element(ma.begin(), ma.end()) >
         min_gap_ns;
}

void judge_items(DiffResult& r, const std::vector<Pair>& pairs, const Side& a, const Side& b,
                 const DiffOptions& options) {
  std::vector<double> p_values;
  std::vector<size_t> tested;
  // An item's positive per-step times (x factor) and how many of the side's steps it had none in.
  auto positive = [](const PooledItem* item, size_t steps, double factor, std::vector<double>* out) {
    out->clear();
    for (size_t e = 0; item && e < item->ns.size(); ++e)
      if (item->ns[e] * factor > 0) out->push_back(item->ns[e] * factor);
    return steps - std::min(steps, out->size());
  };
  std::vector<double> va, vb;
  for (size_t n = 0; n < r.items.size(); ++n) {
    DiffItem& i = r.items[n];
    const DiffTotal& total = i.device ? r.device : r.step;
    const double c = i.factor;
    i.delta_ns = i.new_ns - i.base_ns;
    i.excess_ns = i.new_ns - c * i.base_ns;
    const double scale = total.factor * total.base_ns;
    i.excess_pct = scale > 0 ? 100 * i.excess_ns / scale : (i.excess_ns > 0 ? 100 : 0);
    const double gate_ns = i.new_ns - i.factor_high * i.base_ns;
    i.gate_pct = scale > 0 ? 100 * gate_ns / scale : (gate_ns > 0 ? 100 : 0);
    if (!r.testable || (i.base_ns <= 0 && i.new_ns <= 0)) continue;
    const size_t za = positive(pairs[n].base, a.steps(), c, &va),
                 zb = positive(pairs[n].next, b.steps(), 1.0, &vb);
    i.p_value = mann_whitney_u_sparse(va, za, vb, zb).p;
    i.tested = true;
    tested.push_back(n);
    p_values.push_back(i.p_value);
  }
  r.tested_items = tested.size();
  const std::vector<bool> kept = benjamini_hochberg(p_values, options.alpha);
  for (size_t k = 0; k < tested.size(); ++k) {
    DiffItem& i = r.items[tested[k]];
    i.significant = kept[k];
    const Pair& pair = pairs[tested[k]];
    const DiffTotal& total = i.device ? r.device : r.step;
    const double min_gap_ns = options.threshold_pct / 100 * std::max(0.0, total.factor * total.base_ns);
    i.regression = i.significant && i.excess_ns > 0 && i.gate_pct > options.threshold_pct &&
                   recordings_apart(pair.base, pair.next, i.factor_high, min_gap_ns, a, b);
    r.has_regression = r.has_regression || i.regression;
  }
}

void judge_total(DiffTotal& t, const std::vector<std::vector<double>>& base,
                 const std::vector<std::vector<double>>& next, const std::vector<double>& base_pooled,
                 const std::vector<double>& new_pooled, bool testable, const DiffOptions& options) {
  t.base_ns = mean(base_pooled);
  t.new_ns = mean(new_pooled);
  t.base_steps = base_pooled.size();
  t.new_steps = new_pooled.size();
  const double ratio = t.base_ns > 0 ? t.new_ns / t.base_ns : 1;
  t.change_pct = 100 * (ratio - 1);
  t.excess_pct = 100 * (ratio / t.factor - 1);
  t.tested = testable && t.base_ns > 0;
  if (!t.tested) {
    t.change_low_pct = t.change_high_pct = t.change_pct;
    t.excess_low_pct = t.excess_high_pct = t.excess_pct;
    return;
  }
  const auto [lo, hi] = ratio_interval(base, next, options.alpha);
  t.change_low_pct = 100 * (lo - 1);
  t.change_high_pct = 100 * (hi - 1);
  t.excess_low_pct = 100 * (lo / t.factor - 1);
  t.excess_high_pct = 100 * (hi / t.factor - 1);
  t.regression = t.excess_pct > options.threshold_pct && t.excess_low_pct > 0;
}

std::string pct_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%+.1f%%", v);
  return buf;
}

std::string side_note(const char* side, const std::vector<RecordingSteps>& recs, const Side& pooled) {
  std::map<std::string, size_t> sources;
  for (const RecordingSteps& r : recs) ++sources[std::string(step_source_name(r.source))];
  std::string text = std::string(side) + ": " + std::to_string(recs.size()) +
                     (recs.size() == 1 ? " recording, " : " recordings, ") +
                     std::to_string(pooled.wall_ns.size()) + " steps (";
  bool first = true;
  for (const auto& [name, count] : sources) text += (first ? "" : ", ") + name, first = false;
  text += ")";
  if (pooled.warmup_dropped) text += ", the first step of each recording left out (warm-up)";
  if (pooled.capped)
    text += "; " + std::to_string(pooled.capped) + " per-step values capped at their median + " +
            std::to_string(static_cast<int>(kCapMads)) + " deviations of the values below it (preemption)";
  if (pooled.outside) text += "; " + std::to_string(pooled.outside) + " items outside the steps not compared";
  if (pooled.other_process)
    text += "; " + std::to_string(pooled.other_process) +
            " spans of other processes (DataLoader workers, ...) not compared";
  return text;
}

// Whether a recording ran with fixed malloc thresholds (record's default, or the user's own).
bool fixed_allocator(const RecordingSteps& r) {
  return r.allocator.starts_with(format::keys::kMallocPinned) ||
         r.allocator.starts_with(format::keys::kMallocUser);
}

// What the recordings' allocator settings leave the gate unable to see (docs/diff.md, "Limits"):
// with glibc's dynamic thresholds a process keeps one of two regimes for its life (8 false alarms
// in 20 pairs at one recording a side, 0-1 in 20 with them fixed: docs/diff.md), and sides run with
// different settings compare the allocators as much as the code.
void add_allocator_notes(const std::vector<RecordingSteps>& base, const std::vector<RecordingSteps>& next,
                         std::vector<std::string>* notes) {
  std::set<std::string> settings[2];
  bool all_fixed = true;
  for (int side = 0; side < 2; ++side)
    for (const RecordingSteps& rec : side ? next : base) {
      settings[side].insert(rec.allocator.empty() ? "not recorded" : rec.allocator);
      all_fixed = all_fixed && fixed_allocator(rec);
    }
  auto joined = [](const std::set<std::string>& values) {
    std::string text;
    for (const std::string& v : values) text += (text.empty() ? "" : "; ") + v;
    return text;
  };
  if (settings[0] != settings[1])
    notes->push_back("BASE and NEW ran with different malloc settings (BASE: " + joined(settings[0]) +
                     "; NEW: " + joined(settings[1]) +
                     "): a change of the allocator reads as a change of the code");
  if (base.size() != 1 && next.size() != 1) return;
  if (all_fixed)
    notes->push_back(
        "one recording a side: a difference a process keeps for its whole life (the CPU it ran on) reads as "
        "a change of the code; record several a side (--runs N, or --base/--new FILE...) to see it");
  else
    notes->push_back(
        "one recording a side, not all with fixed malloc thresholds: a process of glibc's dynamic thresholds "
        "keeps one of two allocator regimes for its whole life, which reads as a change of the code (8 false "
        "alarms in 20 pairs measured); record with `strata record` (it fixes them unless --malloc default) "
        "or several a side (--runs N, or --base/--new FILE...) (docs/diff.md, \"Limits\")");
}

// A total judged over its steps and, beyond the speed factor, over its items.
void judge_total_with_items(DiffTotal& t, const std::vector<std::vector<double>>& base,
                            const std::vector<std::vector<double>>& next,
                            const std::vector<double>& base_pooled, const std::vector<double>& new_pooled,
                            const DiffResult& r, bool device, const DiffOptions& options) {
  t.factor = effective_factor(r.items, device);
  judge_total(t, base, next, base_pooled, new_pooled, r.testable, options);
  if (!options.normalize) return;
  std::tie(t.items_low_pct, t.items_high_pct) = excess_interval_over_items(r.items, device, options.alpha);
  t.regression = t.regression && t.items_low_pct > 0;
}

// The one line that says what the gate decided, and why.
std::string verdict_line(const DiffResult& r, const DiffOptions& options) {
  auto item_text = [](const DiffItem& i) {
    std::string t = i.name + (i.shapes.empty() ? "" : " " + i.shapes);
    if (i.status == DiffStatus::kShapeChanged) t += " → " + i.new_shapes;
    if (i.status != DiffStatus::kMatched) t += " (" + change_text(i) + ")";
    return t + " " + pct_text(i.excess_pct) + (i.device ? " of the device time" : " of the step");
  };
  char buf[160];
  std::snprintf(buf, sizeof(buf), "step time %s (interval %s..%s), speed factor %.3f",
                pct_text(r.step.change_pct).c_str(), pct_text(r.step.change_low_pct).c_str(),
                pct_text(r.step.change_high_pct).c_str(), r.step.factor);
  std::string totals = buf;
  if (r.has_regression) {
    std::string line = "REGRESSION:";
    const char* sep = " ";
    for (const DiffTotal* t : {&r.step, &r.device})
      if (t->regression) {
        line += sep + std::string(t == &r.step ? "step" : "device") + " time " + pct_text(t->excess_pct) +
                " beyond the speed factor (interval " + pct_text(t->excess_low_pct) + ".." +
                pct_text(t->excess_high_pct) + ")";
        sep = "; ";
      }
    size_t shown = 0;
    for (const DiffItem& i : r.items)
      if (i.regression && shown++ < 3) line += sep + item_text(i), sep = "; ";
    return line + " (threshold " + pct_text(options.threshold_pct).substr(1) + "; " + totals + ")";
  }
  const DiffItem* largest = nullptr;
  for (const DiffItem& i : r.items)
    if (!largest || i.excess_pct > largest->excess_pct) largest = &i;
  const std::string most = largest ? "; largest change " + item_text(*largest) : "";
  if (r.undecided)
    return "UNDECIDED: " + std::to_string(std::min(r.step.base_steps, r.step.new_steps)) +
           " steps on a side, too few to test (at least " + std::to_string(kMinStepsForTest) +
           " a side: record more steps or --runs)" + most + " (threshold " +
           pct_text(options.threshold_pct).substr(1) + ")";
  return "no regression: " + totals + most + " (threshold " + pct_text(options.threshold_pct).substr(1) + ")";
}

void rank(DiffResult& r) {
  const double step_excess = r.step.factor * r.step.base_ns * r.step.excess_pct / 100;
  const double device_excess = r.device.factor * r.device.base_ns * r.device.excess_pct / 100;
  for (DiffItem& i : r.items) {
    const DiffTotal& t = i.device ? r.device : r.step;
    const double total_excess = i.device ? device_excess : step_excess;
    // A share of a total that hardly moved says nothing.
    i.share_known = std::fabs(t.excess_pct) >= 0.5;
    i.share_pct = i.share_known ? 100 * i.excess_ns / total_excess : 0;
  }
  std::sort(r.items.begin(), r.items.end(), [](const DiffItem& x, const DiffItem& y) {
    if (x.regression != y.regression) return x.regression;
    if (std::fabs(x.excess_pct) != std::fabs(y.excess_pct))
      return std::fabs(x.excess_pct) > std::fabs(y.excess_pct);
    return std::tie(x.level, x.name, x.shapes, x.module) < std::tie(y.level, y.name, y.shapes, y.module);
  });
}

}  // namespace

DiffResult diff_recordings(const std::vector<RecordingSteps>& base, const std::vector<RecordingSteps>& next,
                           const DiffOptions& options) {
  DiffResult r;
  r.threshold_pct = options.threshold_pct;
  r.alpha = options.alpha;
  r.base_recordings = static_cast<int>(base.size());
  r.new_recordings = static_cast<int>(next.size());
  // Key parts both sides carry: a reader that does not record shapes (or module paths) would
  // otherwise match nothing of one that does.
  bool use[2];
  std::string StepItem::*fields[2] = {&StepItem::shapes, &StepItem::module};
  for (int f = 0; f < 2; ++f) {
    const bool in_base = any_text(base, fields[f]), in_new = any_text(next, fields[f]);
    use[f] = in_base && in_new;
    if (in_base != in_new)
      r.notes.push_back(std::string("only ") + (in_base ? "BASE" : "NEW") + " records " +
                        (f ? "module paths" : "shapes") + ": items matched without them");
  }
  const Side a = pool(base, use[0], use[1]), b = pool(next, use[0], use[1]);
  r.notes.push_back(side_note("BASE", base, a));
  r.notes.push_back(side_note("NEW", next, b));
  add_allocator_notes(base, next, &r.notes);
  std::map<std::string, Pair> keys;
  for (const auto& [k, item] : a.items) keys[k].base = &item;
  for (const auto& [k, item] : b.items) keys[k].next = &item;
  std::vector<Pair> pairs;
  for (const auto& [k, pair] : keys) {
    r.items.push_back(item_of(pair.base, pair.next, a.steps(), b.steps()));
    pairs.push_back(pair);
  }
  pair_shape_changes(r.items, pairs);
  r.testable = a.wall_ns.size() >= kMinStepsForTest && b.wall_ns.size() >= kMinStepsForTest;
  r.step.present = r.wall.present = true;
  r.device.present = a.has_device || b.has_device;
  if (options.normalize) {
    speed_factors(r.items, false);
    if (r.device.present) speed_factors(r.items, true);
  }
  if (r.device.present)
    judge_total_with_items(r.device, a.device_by_recording, b.device_by_recording, a.device_ns, b.device_ns,
                           r, true, options);
  // On a step with device work the host's time outside its ops is mostly waiting for the device: it
  // follows the device time, not the host's ops (a slower kernel is the device item's regression).
  if (options.normalize && r.device.present && r.device.base_ns > 0)
    for (DiffItem& i : r.items)
      if (!i.device && i.name == kBetweenOps) i.factor = i.factor_high = r.device.new_ns / r.device.base_ns;
  judge_total_with_items(r.step, a.work_by_recording, b.work_by_recording, a.work_ns, b.work_ns, r, false,
                         options);
  r.wall.factor = r.step.factor;
  judge_total(r.wall, a.wall_by_recording, b.wall_by_recording, a.wall_ns, b.wall_ns, r.testable, options);
  r.wall.regression = false;  // informative: the scheduler's preemptions are in it
  if (options.normalize) {
    char buf[320];
    std::snprintf(
        buf, sizeof(buf),
        "speed factor %.3f: everything in NEW ran %.1f%% %s (each op judged against the matched ops of its "
        "duration per call, x%.0f either way: their change over the middle half of their time; "
        "--no-normalize: "
        "raw changes)",
        r.step.factor, std::fabs(r.step.factor - 1) * 100, r.step.factor >= 1 ? "slower" : "faster",
        kNeighborSpan);
    r.notes.push_back(buf);
  }
  judge_items(r, pairs, a, b, options);
  r.has_regression = r.has_regression || r.step.regression || r.device.regression;
  if (!r.testable) {
    bool beyond = r.step.excess_pct > options.threshold_pct || r.device.excess_pct > options.threshold_pct;
    for (const DiffItem& i : r.items) beyond = beyond || i.excess_pct > options.threshold_pct;
    r.undecided = beyond;
  }
  rank(r);
  r.verdict = verdict_line(r, options);
  return r;
}

DiffResult diff_traces(const trace::Trace& base, const trace::Trace& next, const DiffOptions& options) {
  std::string base_note, new_note;
  const std::vector<RecordingSteps> a = recordings_of(base, "BASE", &base_note),
                                    b = recordings_of(next, "NEW", &new_note);
  DiffResult r = diff_recordings(a, b, options);
  for (const std::string* n : {&base_note, &new_note})
    if (!n->empty()) r.notes.push_back(*n);
  return r;
}

}  // namespace strata::analysis
