// strata diff's result as tables (trace_diff.h): the totals, the host and device changes, the verdict.
#include <cmath>
#include <cstdio>

#include "analysis/trace_diff.h"
#include "core/level.h"

namespace strata::analysis {
namespace {

using table::Cell;

// 1680 -> "1,680"; 6.5 -> "6.5".
std::string count_text(double v) {
  char buf[64];
  const double rounded = std::round(v);
  if (std::fabs(v - rounded) >= 0.05) {
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.0f", std::fabs(rounded));
  std::string digits = buf, out = rounded < 0 ? "-" : "";
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return out;
}

const char* total_verdict(const DiffTotal& t, bool shown_only) {
  if (t.regression) return "REGRESSION";
  if (shown_only) return "shown";
  if (!t.tested) return "untested";
  if (t.excess_low_pct > 0) return "slower";
  if (t.excess_high_pct < 0) return "faster";
  return "noise";
}

Cell ms(double ns) { return Cell::real(ns / 1e6, 4); }

table::Table totals_table(const DiffResult& r, size_t top) {
  table::Table t;
  t.name = "totals";
  t.title = "Step time, BASE against NEW (mean per step; interval at level 1 - alpha)";
  t.columns = {"what",         "base_ms",    "new_ms",     "change_pct", "change_low_pct", "change_high_pct",
               "speed_factor", "excess_pct", "base_steps", "new_steps",  "verdict"};
  for (const DiffTotal* total : {&r.step, &r.wall, &r.device}) {
    if (!total->present || t.rows.size() >= top) continue;
    t.rows.push_back({Cell::text(total == &r.step   ? "step time"
                                 : total == &r.wall ? "wall time"
                                                    : "device time"),
                      ms(total->base_ns), ms(total->new_ns), Cell::real(total->change_pct, 2),
                      Cell::real(total->change_low_pct, 2), Cell::real(total->change_high_pct, 2),
                      Cell::real(total->factor, 4), Cell::real(total->excess_pct, 2),
                      Cell::integer(static_cast<int64_t>(total->base_steps)),
                      Cell::integer(static_cast<int64_t>(total->new_steps)),
                      Cell::text(total_verdict(*total, total == &r.wall))});
  }
  t.notes.push_back(
      "step time: the main thread's ops (self time) and the time between them, each capped per "
      "recording at its median + " +
      std::to_string(static_cast<int>(kCapMads)) +
      " deviations (a preemption by the scheduler is not a change); wall time: as recorded, never a "
      "regression");
  for (const std::string& note : r.notes) t.notes.push_back(note);
  char buf[600];
  std::snprintf(
      buf, sizeof(buf),
      "REGRESSION: the step (device) time slower beyond the speed factor by more than %.1f%% with its "
      "intervals over the steps and over the items above zero, or an item that explains more than %.1f%% of "
      "it beyond its factor, differs significantly (Mann-Whitney U over the steps, Benjamini-Hochberg over "
      "the %zu items tested at %.2f) and is slower by that much in every NEW recording than in every BASE "
      "one",
      r.threshold_pct, r.threshold_pct, r.tested_items, r.alpha);
  t.notes.push_back(buf);
  return t;
}

table::Table changes_table(const DiffResult& r, bool device, size_t top) {
  table::Table t;
  t.name = device ? "device_changes" : "changes";
  t.title = device ? "Device work that changed, by its share of the device time per step"
                   : "What changed, by its share of the step time (beyond the speed factor)";
  t.columns = {"rank",       "level",     "name",     "shapes",     "module",   "change",
               "base_ms",    "new_ms",    "delta_ms", "excess_pct", "gate_pct", "share_pct",
               "base_calls", "new_calls", "p_value",  "verdict"};
  int64_t rank = 0;
  for (const DiffItem& i : r.items) {
    if (i.device != device) continue;
    ++rank;
    if (t.rows.size() >= top) continue;
    t.rows.push_back(
        {Cell::integer(rank), Cell::text(level_name(i.level)), Cell::text(i.name),
         Cell::text(i.status == DiffStatus::kShapeChanged ? i.shapes + " → " + i.new_shapes : i.shapes),
         Cell::text(i.module), Cell::text(change_text(i)), ms(i.base_ns), ms(i.new_ns), ms(i.delta_ns),
         Cell::real(i.excess_pct, 2), Cell::real(i.gate_pct, 2),
         i.share_known ? Cell::real(i.share_pct, 1) : Cell::empty(), Cell::real(i.base_count, 1),
         Cell::real(i.new_count, 1), Cell::real(i.p_value, 6), Cell::text(verdict_text(i))});
  }
  if (static_cast<size_t>(rank) > t.rows.size())
    t.notes.push_back(std::to_string(t.rows.size()) + " of " + std::to_string(rank) + " items shown (--top)");
  t.notes.push_back(device ? "times per step: the kernels, copies and memsets launched in the step"
                           : "times per step: self time (less the ops inside); " + std::string(kBetweenOps) +
                                 ": the step time outside every op");
  return t;
}

}  // namespace

std::string change_text(const DiffItem& i) {
  switch (i.status) {
    case DiffStatus::kAdded:
      return "added";
    case DiffStatus::kRemoved:
      return "removed";
    case DiffStatus::kShapeChanged:
      return "shapes changed";
    case DiffStatus::kMatched:
      break;
  }
  const double lo = std::min(i.base_count, i.new_count), hi = std::max(i.base_count, i.new_count);
  if (hi - lo >= 0.5 && hi >= 1.05 * lo)
    return "calls " + count_text(i.base_count) + " → " + count_text(i.new_count);
  return "time";
}

const char* verdict_text(const DiffItem& i) {
  if (i.regression) return "REGRESSION";
  if (!i.tested) return "untested";
  if (!i.significant) return "noise";
  return i.excess_ns > 0 ? "slower" : "faster";
}

std::vector<table::Table> diff_tables(const DiffResult& r, size_t top) {
  std::vector<table::Table> out;
  out.push_back(totals_table(r, top));
  out.push_back(changes_table(r, false, top));
  if (r.device.present) out.push_back(changes_table(r, true, top));
  table::Table v;
  v.name = "verdict";
  v.title = "Verdict";
  v.columns = {"regression", "undecided", "text"};
  if (top > 0)
    v.rows.push_back({Cell::integer(r.has_regression), Cell::integer(r.undecided), Cell::text(r.verdict)});
  out.push_back(std::move(v));
  return out;
}

}  // namespace strata::analysis
