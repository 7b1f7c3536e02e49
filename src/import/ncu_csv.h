// Nsight Compute CSV (`ncu --csv`, the details page and `--page raw`) -> kernels with their metrics.
//
// ncu's CSV comes as the tool prints it: `==PROF==` lines and the profiled program's own output are
// mixed in (lines that are not CSV records before and after the table are skipped and counted),
// numbers may carry thousands separators ("1,024") inside their quotes, units come in a column
// (details page: "Metric Unit"), in a units row under the header (raw page) or in the header as
// "name [unit]", and rows may end in a trailing comma or stop before the rule columns.
//
// Each kernel (one ncu "ID") becomes a device execution span named by its "Kernel Name". Every metric
// row is kept as an attribute "ncu.<metric> [<unit>]" (a metric when numeric, a string otherwise),
// and the facts analyses read get their canonical keys (core/attr_keys.h): flops (and flops_sp/dp/hp
// from the SASS counters), tensor_instructions, dram_read_bytes, dram_write_bytes,
// achieved_occupancy, registers_per_thread, grid/block sizes. ncu serializes kernels and gives no
// start times: the spans are laid back to back in ID order, each as long as its measured duration
// ("Duration" / gpu__time_duration.sum).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/span_record.h"
#include "trace/trace.h"

namespace strata::import {

struct NcuMetric {
  std::string name;  // as ncu spells it ("Duration", "dram__bytes_read.sum")
  std::string unit;  // as ncu spells it ("ns", "msecond", "byte", "%"), or empty
  std::string text;  // the value as written (thousands separators removed when numeric)
  bool numeric = false;
  double value = 0;
};

struct NcuKernel {
  int64_t id = 0;  // ncu's ID: the launch order among the profiled kernels
  std::string name;
  int64_t pid = 0;
  std::string process_name;
  int64_t device = -1, stream = -1, context = -1;
  int64_t block[3] = {-1, -1, -1}, grid[3] = {-1, -1, -1};  // "(384, 1, 1)" columns
  std::vector<NcuMetric> metrics;  // every metric row, in file order (rule rows as "rule.<name>")
  size_t line = 0;                 // the first line of this kernel in the file
  // Canonical facts (absent: < 0 or NaN via has_*), in canonical units.
  double duration_ns = -1;
  std::vector<AttrRecord> canonical(trace::Trace& t) const;
};

struct NcuProfile {
  bool raw_page = false;
  std::vector<NcuKernel> kernels;  // in ID order
  uint64_t metric_rows = 0;        // details page: metric rows; raw page: kernel rows x metric columns
  uint64_t rule_rows = 0;          // details page rows that carry a rule, not a metric
  uint64_t other_lines = 0;        // ==PROF== lines, the program's output, blank lines
};

// Parses ncu CSV text. False with *error set to one line naming `source`, the line, the field and
// what to do.
bool parse_ncu_csv(std::string_view text, const std::string& source, NcuProfile* out, std::string* error);

// Whether the first bytes look like ncu CSV (a header row with "ID" and "Kernel Name").
bool looks_like_ncu_csv(std::string_view head);

// Appends the kernels as spans (one process per ncu Process ID) with their stats.
void add_ncu_spans(const NcuProfile& profile, const std::string& source, trace::Trace* trace);

// Joins measured metrics to the kernels of a trace of the same program: the k-th profiled launch of
// a kernel name gets the metrics of the k-th ncu kernel of that name (by ID). Names match exactly,
// or else by their base name (no return type, template arguments or parameters: ncu prints
// function names with --print-kernel-base function). Counted in processes[0].stats.
struct NcuJoinCounts {
  uint64_t matched = 0;
  uint64_t ncu_unmatched = 0;           // ncu kernels with no launch of that name and ordinal
  uint64_t trace_without_metrics = 0;   // trace kernels no ncu kernel matched (ncu profiled a subset)
};
NcuJoinCounts join_ncu_metrics(const NcuProfile& profile, trace::Trace* trace);

// The part of a kernel name that both ncu's function and demangled forms share.
std::string_view kernel_base_name(std::string_view name);

// Registers the ncu CSV reader ("ncu") with the model's reader registry. Idempotent.
void register_ncu_reader();

}  // namespace strata::import
