// The native reader: Strata trace files (one file, or a directory of per-process files) into the
// TraceBuilder. Registered as "native" in the reader registry (trace_reader.h), which is how
// commands open traces; load_trace() stays for code that only ever reads native files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/stats.h"
#include "format/chunk_reader.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::trace {

class TraceReader;
std::unique_ptr<TraceReader> make_native_reader();

// Feeds one chunk stream (a file, or memory for fuzzing and tests) to the builder. False with *error
// set to one line (file, offset, reason, what to do) when nothing usable could be read; damage after
// a valid start becomes stats (load.*) and warnings instead.
bool load_chunks(format::ChunkReader& reader, TraceBuilder& builder, std::string* error);
// A file, or every .strata file of this user in a directory (in name order; NativeInputs).
bool load_native(const std::string& path, TraceBuilder& builder, std::string* error);

// The files a native trace path names: the file itself, or a directory's *.strata entries that are
// regular files of this user (`strata attach`'s epochs, a kept work directory), listed through the
// directory's descriptor and each opened relative to it without following a link. Anything else
// there (a link, a device, a file another user put in a shared directory) is never opened: one line
// each in skipped(), which callers warn about and count (load.directory_entries_skipped).
class NativeInputs {
 public:
  NativeInputs() = default;
  ~NativeInputs();
  NativeInputs(const NativeInputs&) = delete;
  NativeInputs& operator=(const NativeInputs&) = delete;

  // False with *error when the directory cannot be listed or holds no file of this user.
  bool list(const std::string& path, std::string* error);
  size_t size() const { return names_.size(); }
  // The path shown for input i (DIR/NAME for a directory's entry).
  std::string shown(size_t i) const;
  // Opens input i. False with *error (a file that cannot be read: stop) or, for a directory's
  // entry that changed since it was listed, *skipped (a line to warn about and count: go on).
  bool open(size_t i, format::ChunkReader* reader, std::string* skipped, std::string* error) const;
  const std::vector<std::string>& skipped() const { return skipped_; }

 private:
  std::string path_;
  int dir_fd_ = -1;
  std::vector<std::string> names_;
  std::vector<std::string> skipped_;
};

struct LoadOptions {
  bool sort_by_start = true;  // false: spans stay in file order (writer and reader benchmarks)
};

// load_native + TraceBuilder::finish without building the structure (built on first use).
bool load_trace(const std::string& path, Trace* trace, std::string* error, const LoadOptions& options = {});

// A damaged file that yields no span is an error, not an empty trace (load_trace and the streamed
// summary apply it alike): what was wrong with the file read by `reader` ("" when nothing), and the
// one-line error for it.
std::string damage_of(const format::ChunkReader& reader, const std::string& file);
std::string nothing_recovered_error(const std::string& damage);

// A Process chunk's and a Stats chunk's properties into a Process, as the native reader and the
// streamed summary (trace_summary.h) both read them: counters the stats registry knows become the
// process's stats (found by their on-disk keys, so old files read alike), the rest is kept as
// properties; a counter that is not an event count (an integer from 0 to 2^48) is left out, and
// *problems gets one line for each such counter (callers count them: load.bad_counters).
void read_process_properties(format::Properties props, Process* p, std::vector<std::string>* problems);
void read_stats_properties(const format::Properties& props, Process* p, bool thread_names,
                           std::vector<std::string>* problems);
// The counters a Record chunk holds (stats stored as Disk::kRecord, e.g. merge.foreign_stream_chunks),
// for the trace's stats; the loader and the streamed summary add them alike. A value that is not an
// event count is left out with one line in *problems (load.bad_counters).
std::vector<std::pair<stats::Stat, uint64_t>> record_stats(const format::Properties& props,
                                                           std::vector<std::string>* problems);
// The warning for a second Process chunk of one stream (another writer claiming its id): the loader
// and the streamed summary ignore it alike and count it (load.duplicate_process_chunks).
std::string duplicate_process_warning(uint64_t stream_id, const format::Properties& props);

// load_chunks into *trace, unsorted (fuzzing).
bool load_chunks(format::ChunkReader& reader, Trace* trace, std::string* error);

}  // namespace strata::trace
