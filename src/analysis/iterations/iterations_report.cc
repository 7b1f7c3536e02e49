// Tables of the iterations analysis (rendered as text, CSV or JSON by export/table_render).
#include <algorithm>
#include <cstdio>

#include "analysis/iterations/iterations_analysis.h"
#include "core/level.h"

namespace strata::analysis::iterations {
namespace {

using analysis::Cell;
using analysis::Table;

Cell ms(double ns) { return Cell::real(ns / 1e6, 3); }
Cell us(double ns) { return Cell::real(ns / 1e3, 1); }
Cell pct(double share) { return Cell::real(100.0 * share, 1); }

std::string flags_of(const IterationMetrics& it) {
  std::string f;
  auto add = [&f](const std::string& s) { f += (f.empty() ? "" : ",") + s; };
  if (it.inner_extra_ops > 0) add("extra_inside:" + std::to_string(it.inner_extra_ops));
  if (it.trailing_extra_ops > 0) add("extra_after:" + std::to_string(it.trailing_extra_ops));
  if (it.time_outlier) add("time_outlier");
  if (it.interval_outlier) add("interval_outlier");
  return f;
}

std::string op_name(const trace::Trace& trace, const IterationsReport& report, int32_t symbol) {
  if (symbol < 0 || static_cast<size_t>(symbol) >= report.symbol_names.size()) return "?";
  return std::string(trace.strings.get(report.symbol_names[static_cast<size_t>(symbol)]));
}

// Repetition inside each loop's iteration (RNN time steps, stacked blocks, micro-batches): what the
// miner recognized as nested structure, never as the iteration.
Table nested_table(const trace::Trace& trace, const IterationsReport& report) {
  Table t;
  t.name = "nested";
  t.title = "Nested repetition inside each iteration (not iterations)";
  t.columns = {"loop",       "depth",      "at_op",  "unit_ops",   "copies",
               "copies_min", "copies_max", "folded", "unit_first", "unit_last"};
  for (size_t l = 0; l < report.mining.loops.size(); ++l) {
    const Loop& loop = report.mining.loops[l];
    for (const NestedRepeat& r : loop.nested) {
      const std::string first = op_name(trace, report, r.unit.empty() ? -1 : r.unit.front());
      const std::string last = op_name(trace, report, r.unit.empty() ? -1 : r.unit.back());
      t.rows.push_back({Cell::integer(static_cast<int64_t>(l)), Cell::integer(r.depth),
                        Cell::integer(r.offset), Cell::integer(r.unit_ops), Cell::integer(r.copies),
                        Cell::integer(r.copies_min), Cell::integer(r.copies_max),
                        Cell::integer(r.folded ? 1 : 0), Cell::text(first), Cell::text(last)});
    }
    // One note per unit: how many runs of it an iteration holds, and their counts over the loop.
    std::vector<const NestedRepeat*> seen;
    for (const NestedRepeat& r : loop.nested) {
      if (t.notes.size() >= 6) break;
      if (std::any_of(seen.begin(), seen.end(), [&](const NestedRepeat* q) { return q->unit == r.unit; }))
        continue;
      seen.push_back(&r);
      int64_t runs = 0;
      for (const NestedRepeat& q : loop.nested) runs += q.unit == r.unit;
      char buf[240];
      const std::string count = r.copies_min == r.copies_max ? "x" + std::to_string(r.copies_min)
                                                             : "x" + std::to_string(r.copies_min) + " to x" +
                                                                   std::to_string(r.copies_max);
      std::snprintf(buf, sizeof buf, "loop %zu: %lld run(s) per iteration of a %lld-op unit, %s per run%s", l,
                    static_cast<long long>(runs), static_cast<long long>(r.unit_ops), count.c_str(),
                    r.depth > 0 ? " (inside a larger nested unit)" : "");
      std::string note = buf;
      note += ": '" + op_name(trace, report, r.unit.empty() ? -1 : r.unit.front()) + "' .. '" +
              op_name(trace, report, r.unit.empty() ? -1 : r.unit.back()) + "'";
      if (r.folded) note += "; the miner read this repetition and walked past it (nested, not the iteration)";
      t.notes.push_back(note);
    }
    if (loop.by_anchor)
      t.notes.push_back(
          "loop " + std::to_string(l) +
          ": each iteration holds one optimizer step (Optimizer.step#...): repetition without one "
          "is nested");
  }
  return t;
}

// The loops' summary: one row per loop, the mining's figures and confidence in the notes.
Table summary_table(const IterationsReport& report) {
  const MiningResult& mining = report.mining;
  const TrackInfo& main = report.classes.tracks[report.classes.main_track];
  Table summary;
  summary.name = "iterations_summary";
  summary.title = "Iterations (mined without step markers) on " + main.label;
  summary.columns = {"loop",
                     "cycle_ops",
                     "iterations",
                     "flagged",
                     "mean_ms",
                     "median_ms",
                     "stddev_ms",
                     "min_ms",
                     "max_ms",
                     "avg_interval_ms",
                     "max_interval_ms",
                     "max_interval_at",
                     "avg_overlap_pct",
                     "avg_op_gap_us",
                     "avg_copy_bytes",
                     "time_outliers",
                     "interval_outliers",
                     "verdict",
                     "confidence"};
  for (const LoopSummary& s : report.metrics.loops) {
    const Diagnosis* d = nullptr;
    for (const Diagnosis& x : report.diagnoses)
      if (x.loop == s.loop) d = &x;
    summary.rows.push_back(
        {Cell::integer(s.loop), Cell::integer(s.cycle_ops), Cell::integer(s.iterations),
         Cell::integer(s.flagged), ms(s.mean_time_ns), ms(s.median_time_ns), ms(s.stddev_time_ns),
         ms(s.min_time_ns), ms(s.max_time_ns), ms(s.mean_interval_ns),
         ms(static_cast<double>(s.max_interval_ns)),
         s.max_interval_iteration >= 0 ? Cell::integer(s.max_interval_iteration) : Cell::empty(),
         pct(s.avg_overlap), us(s.avg_op_gap_ns),
         s.avg_copy_bytes >= 0 ? Cell::real(s.avg_copy_bytes, 0) : Cell::empty(),
         Cell::integer(s.time_outliers), Cell::integer(s.interval_outliers),
         d != nullptr ? Cell::text(std::string(verdict_name(d->verdict, d->device_trace))) : Cell::empty(),
         Cell::real(mining.confidence, 2)});
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: %lld %s ops mined (%s); %lld iterations in %zu loop(s); ops before the first iteration "
                "%lld, after "
                "the last %lld, between iterations in no loop %lld",
                mining.detected ? "iteration count detected" : "iteration count given",
                static_cast<long long>(mining.ops), level_name(report.classes.op_level).c_str(),
                report.classes.note.c_str(), static_cast<long long>(mining.iterations.size()),
                mining.loops.size(), static_cast<long long>(mining.ops_before),
                static_cast<long long>(mining.ops_after), static_cast<long long>(mining.ops_between));
  summary.notes.push_back(buf);
  std::snprintf(buf, sizeof buf, "confidence %.2f (%s)", mining.confidence,
                mining.confidence >= 0.9   ? "high"
                : mining.confidence >= 0.6 ? "medium"
                                           : "low");
  summary.notes.push_back(buf + std::string(": ") + mining.confidence_note);
  for (const std::string& n : report.notes) summary.notes.push_back(n);
  summary.notes.push_back(
      "interval: idle time between an iteration's start and the previous iteration's end; overlap: share of "
      "it "
      "covered by input copies (" +
      std::string(report.classes.device_trace ? "host-to-device copies"
                                              : "top-level host data copies, the CPU analog") +
      ")");
  return summary;
}

// One row per mined iteration.
Table iterations_table(const IterationsReport& report) {
  Table rows;
  rows.name = "iterations";
  rows.title = "Per-iteration metrics";
  rows.columns = {"iteration", "loop",          "start_ms", "time_ms", "interval_ms", "overlap_pct",
                  "busy_ms",   "avg_op_gap_us", "ops",      "copies",  "copy_bytes",  "flags"};
  const int64_t origin = report.metrics.iterations.empty() ? 0 : report.metrics.iterations.front().start_ns;
  for (const IterationMetrics& it : report.metrics.iterations) {
    rows.rows.push_back(
        {Cell::integer(it.index), Cell::integer(it.loop), ms(static_cast<double>(it.start_ns - origin)),
         ms(static_cast<double>(it.time_ns)),
         it.interval_ns ? ms(static_cast<double>(*it.interval_ns)) : Cell::empty(),
         it.interval_ns ? pct(it.overlap) : Cell::empty(), ms(static_cast<double>(it.busy_ns)),
         us(it.avg_op_gap_ns), Cell::integer(it.ops), Cell::integer(it.copies),
         it.copy_bytes >= 0 ? Cell::integer(it.copy_bytes) : Cell::empty(), Cell::text(flags_of(it))});
  }
  rows.notes.push_back(
      "start_ms is relative to the first iteration; flags: extra ops inside the iteration or after "
      "it (evaluation, logging, checkpoints), robust outliers (3.5 MADs from the median)");
  return rows;
}

// How each track was classified (the role that picked the main track).
Table streams_table(const IterationsReport& report) {
  Table streams;
  streams.name = "streams";
  streams.title = "Stream classification (" + level_name(report.classes.op_level) + " ops)";
  streams.columns = {"track", "role", "copy_direction", "ops", "compute", "copies", "memsets", "busy_ms"};
  for (const TrackInfo& t : report.classes.tracks) {
    int64_t copies = 0;
    for (uint64_t c : t.copies) copies += static_cast<int64_t>(c);
    streams.rows.push_back({Cell::text(t.label), Cell::text(std::string(role_name(t.role))),
                            Cell::text(std::string(direction_name(t.copy_direction))),
                            Cell::integer(static_cast<int64_t>(t.ops)),
                            Cell::integer(static_cast<int64_t>(t.compute_ops)), Cell::integer(copies),
                            Cell::integer(static_cast<int64_t>(t.memsets)),
                            ms(static_cast<double>(t.busy_ns))});
  }
  return streams;
}

}  // namespace

std::vector<Table> report_tables(const trace::Trace& trace, const IterationsReport& report) {
  std::vector<Table> tables;
  tables.push_back(summary_table(report));
  tables.push_back(iterations_table(report));
  tables.push_back(streams_table(report));
  Table diag;
  diag.name = "diagnosis";
  diag.title = "Diagnosis (ranked causes per loop)";
  diag.columns = {"loop", "rank", "cause", "share_pct", "evidence"};
  Table gaps;
  gaps.name = "gap_spans";
  gaps.title = "Spans inside the intervals between iterations (what to look at next)";
  gaps.columns = {"loop", "name", "level", "count", "in_intervals_ms"};
  for (const Diagnosis& d : report.diagnoses) {
    int rank = 1;
    for (const RankedCause& c : d.ranked)
      diag.rows.push_back({Cell::integer(d.loop), Cell::integer(rank++),
                           Cell::text(std::string(verdict_name(c.verdict, d.device_trace))), pct(c.share),
                           Cell::text(c.evidence)});
    diag.notes.push_back("loop " + std::to_string(d.loop) +
                         " verdict: " + std::string(verdict_name(d.verdict, d.device_trace)) + ". Why: " + d.reason +
                         ". Next: " + d.next_step);
    for (const GapSpan& g : d.gap_spans)
      gaps.rows.push_back({Cell::integer(d.loop), Cell::text(g.name), Cell::text(g.level),
                           Cell::integer(g.count), ms(static_cast<double>(g.in_interval_ns))});
  }
  tables.push_back(std::move(diag));
  tables.push_back(std::move(gaps));
  if (Table nested = nested_table(trace, report); !nested.rows.empty()) tables.push_back(std::move(nested));
  return tables;
}

}  // namespace strata::analysis::iterations
