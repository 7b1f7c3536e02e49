// A generated multi-rank trace for the cross-rank analyses' tests: per rank, runtime launch calls on
// a host thread and device work on three streams (kernels, copies, collectives; overlapping work,
// gaps of every size, launches before and after their work starts, work without a launch), plus
// spans that must be ignored (a sync record and a device range on a stream). Everything in whole
// microseconds, so the brute-force references in the tests can walk a 1 us grid.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "trace/trace.h"

namespace strata::testing {

struct GenWork {
  int64_t owner = 0;  // the rank, or -1 - process index for a process without a rank
  uint16_t process = 0;
  uint32_t stream = 0;
  ActivityType type = ActivityType::kKernel;
  std::string name;
  int64_t start = 0, end = 0;  // us
  bool linked = false;         // has a launch call
  int64_t call_start = 0, call_end = 0;
};

struct GenTrace {
  trace::Trace trace;
  std::vector<GenWork> work;  // device work that holds a stream
  int64_t origin_us = 0;      // earliest span start
};

inline void add_gen_span(trace::Trace& t, uint16_t process, const std::string& name, Level level,
                         SpanKind kind, ActivityType type, uint32_t stream, uint64_t correlation,
                         int64_t start_us, int64_t end_us) {
  SpanRecord s;
  s.span_id = t.spans.size() + 1;
  s.process = process;
  s.name = t.strings.intern(name);
  s.start_ns = start_us * 1000, s.end_ns = end_us * 1000;
  s.tid = stream == kNoStream ? 1 : 0;
  s.stream = stream;
  s.device = stream == kNoStream ? kNoDevice : 0;
  s.correlation_id = correlation;
  s.level = static_cast<uint8_t>(level);
  s.kind = static_cast<uint8_t>(kind);
  s.activity = static_cast<uint8_t>(type);
  t.add_span(s);
}

// `ranks` ranked processes (rank r on host "node<r/2>"), plus one process without a rank when
// `unranked` is set; `items` pieces of work per stream.
inline GenTrace generate_ranks(int ranks, bool unranked, int items, uint32_t seed) {
  GenTrace g;
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int processes = ranks + (unranked ? 1 : 0);
  g.origin_us = INT64_MAX;
  for (int p = 0; p < processes; ++p) {
    trace::Process proc;
    proc.pid = 100 + p;
    if (p < ranks) {
      proc.properties.set_int("rank", p);
      proc.host = "node" + std::to_string(p / 2);
    }
    g.trace.add_process(std::move(proc));
  }
  const char* kernels[] = {"gemm", "relu", "softmax", "layernorm"};
  for (int p = 0; p < processes; ++p) {
    const int64_t owner = p < ranks ? p : -1 - p;
    uint64_t correlation = 1;
    for (uint32_t stream : {7u, 9u, 13u}) {
      int64_t start = uniform(0, 40), prev_duration = 0;
      for (int k = 0; k < items; ++k) {
        GenWork w;
        w.owner = owner, w.process = static_cast<uint16_t>(p), w.stream = stream;
        if (k > 0) {
          // Back to back, small and large gaps, and overlaps with the previous work.
          const int64_t mode = uniform(0, 9);
          const int64_t gap = mode < 3   ? uniform(0, 3)
                              : mode < 6 ? uniform(4, 60)
                              : mode < 8 ? uniform(-10, -1)
                                         : uniform(100, 400);
          start += std::max<int64_t>(1, prev_duration + gap);
        }
        const int64_t duration = uniform(0, 9) == 0 ? uniform(1, 3) : uniform(2, 60);
        w.start = start, w.end = start + duration;
        prev_duration = duration;
        w.type = stream == 13 ? (uniform(0, 3) == 0 ? ActivityType::kKernel : ActivityType::kCollective)
                 : stream == 9 && uniform(0, 2) == 0 ? ActivityType::kMemcpyHtoD
                                                     : ActivityType::kKernel;
        w.name = w.type == ActivityType::kCollective ? (uniform(0, 1) ? "ncclAllReduce" : "ncclAllGather")
                 : w.type == ActivityType::kKernel   ? kernels[uniform(0, 3)]
                                                     : "Memcpy HtoD";
        w.linked = uniform(0, 9) != 0;
        if (w.linked) {
          // Launched well ahead (a queue), just before, or after the work starts (clocks disagree).
          const int64_t lead = uniform(0, 9) == 0 ? -uniform(1, 4)
                               : uniform(0, 1)    ? uniform(1, 12)
                                                  : uniform(20, 300);
          w.call_start = w.start - lead;
          w.call_end =
              w.call_start + (uniform(0, 29) == 0 ? uniform(60, 200) : uniform(2, 18));  // a few slow calls
        }
        g.work.push_back(w);
      }
    }
    // Host calls first (a thread's spans), then device work, each with its correlation id.
    for (GenWork& w : g.work) {
      if (w.process != p) continue;
      const uint64_t id = w.linked ? correlation++ : 0;
      if (w.linked) {
        add_gen_span(g.trace, w.process,
                     w.type == ActivityType::kMemcpyHtoD ? "cudaMemcpyAsync" : "cudaLaunchKernel",
                     Level::kRuntimeApi, SpanKind::kLaunch, ActivityType::kRuntimeCall, kNoStream, id,
                     w.call_start, w.call_end);
        g.origin_us = std::min(g.origin_us, w.call_start);
      }
      add_gen_span(g.trace, w.process, w.name, Level::kDevice, SpanKind::kExecution, w.type, w.stream, id,
                   w.start, w.end);
      g.origin_us = std::min(g.origin_us, w.start);
    }
    // Ignored: a sync record and a device range covering stream 7's gaps.
    add_gen_span(g.trace, static_cast<uint16_t>(p), "cudaStreamSynchronize", Level::kDevice,
                 SpanKind::kExecution, ActivityType::kSync, 7, 0, 0, 5000);
    add_gen_span(g.trace, static_cast<uint16_t>(p), "range", Level::kDevice, SpanKind::kExecution,
                 ActivityType::kDeviceRange, 7, 0, 0, 5000);
    g.origin_us = std::min<int64_t>(g.origin_us, 0);
  }
  return g;
}

inline analysis::AnalysisResult run_analysis(const trace::Trace& t, const char* name,
                                             const analysis::Params& params = {}) {
  return analysis::find_analysis(name)->run({t, t.tree(), params});
}

inline const analysis::Table& table_named(const analysis::AnalysisResult& r, const std::string& name) {
  for (const auto& t : r.tables)
    if (t.name == name) return t;
  static const analysis::Table none;
  ADD_FAILURE() << "no table " << name;
  return none;
}

inline size_t column(const analysis::Table& t, const std::string& name) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == name) return c;
  ADD_FAILURE() << t.name << ": no column " << name;
  return 0;
}

inline double num(const analysis::Cell& c) {
  if (const auto* d = std::get_if<double>(&c.value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&c.value)) return static_cast<double>(*i);
  ADD_FAILURE() << "not a number";
  return -1;
}

// The rank cell as the owner id the generator uses: the rank, or -1 - process index (unranked
// processes are told apart by their order in the table, which follows the process index downwards).
inline bool has_rank(const analysis::Cell& c) { return std::holds_alternative<int64_t>(c.value); }

// NumPy's linear-interpolation percentile, written out again for the references.
inline double ref_percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace strata::testing
