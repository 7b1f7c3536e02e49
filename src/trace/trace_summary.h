// Counts over a trace, shared by `strata record` (its closing summary), `strata info` and
// `strata import`. summarize_file() streams the file chunk by chunk: its memory does not grow
// with the trace (one chunk, and a few counters per process), so a many-GB recording is
// summarized without loading it. summarize() gives the same counts for a trace already in memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/stats.h"
#include "format/chunk_reader.h"
#include "format/properties.h"
#include "trace/trace.h"

namespace strata::trace {

struct TraceSummary {
  // As the loader fills them (properties, stats, span_count, ended_cleanly, ...), except that a
  // streamed summary keeps only the first and the last of each process's clock snapshots, and no
  // thread names.
  std::vector<Process> processes;
  std::vector<uint64_t> clock_snapshot_counts;  // per process: how many snapshots the stream holds
  format::Properties record;                    // what `strata record` wrote
  stats::StatSet stats;                         // trace-wide: what reading found (load.*)
  std::vector<std::string> warnings;            // as the loader words them
  uint64_t spans = 0;
  std::map<uint8_t, uint64_t> spans_per_level;
  std::map<uint8_t, uint64_t> spans_per_kind;
  std::map<uint8_t, uint64_t> spans_per_activity;  // ActivityType value -> spans, as stored
  // Spans of format 1.0 files (summarize_file): stored without an activity type; the loader types
  // them (trace/activity_upgrade.h), a streamed summary does not.
  uint64_t format_1_0_spans = 0;
  std::map<std::pair<int64_t, uint8_t>, uint64_t> spans_per_process_level;  // (pid, level)
  // Dropped events and records by stat name (collector.buffer_full, import.malformed_event, or the
  // on-disk key of a cause the stats registry does not know), summed over processes.
  std::map<std::string, uint64_t> drops;
  uint64_t unfinished = 0;
  uint64_t samples = 0;                    // CPU samples (weighted counts)
  std::vector<std::string> sample_modes;   // how they were taken (one per distinct mode)
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

TraceSummary summarize(const Trace& trace);

// Streams `path` (a trace file, or a directory of them, as load_trace reads it). False with one
// line in *error when nothing could be read.
bool summarize_file(const std::string& path, TraceSummary* out, std::string* error);
// Same, from an already opened chunk reader (memory input for fuzzing and tests).
bool summarize_chunks(format::ChunkReader& reader, TraceSummary* out, std::string* error);

// Drop causes whose event is not lost (stats::keeps_event: collector.end_lost, the span is kept,
// marked unfinished; collector.string_truncated, the event is kept with its string cut), by stat name
// or by the collector's cause ("end_lost"). A total of lost events must leave them out, or a span
// whose end was lost counts once as a span and once as lost.
bool drop_keeps_event(std::string_view cause);

// Spans lost for want of buffer space in one process, and the budget that would have held them.
struct BufferLoss {
  int64_t pid = 0;
  uint64_t lost_spans = 0;    // collector.buffer_full
  uint64_t kept_spans = 0;    // spans the stream holds
  uint64_t budget_bytes = 0;  // the process's event buffer budget (0: unknown)
  uint64_t needed_bytes = 0;  // budget + the lost spans at 32 bytes each (one begin and one end
                              // event of 16 bytes: a lower bound, named spans take more)
};
// Processes that lost spans to a full buffer, worst first.
std::vector<BufferLoss> buffer_losses(const TraceSummary& summary);

}  // namespace strata::trace
