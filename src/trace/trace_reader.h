// Opening a trace of any format: readers in a registry, one `open_trace` for every command (as LLVM
// XRay's one loadTraceFile serves all its tools). The native reader is built in; other modules
// register theirs (import::register_readers(): Kineto/PyTorch, ONNX Runtime and TensorFlow JSON;
// later Nsight Systems SQLite, Nsight Compute CSV, ...). A reader only feeds the TraceBuilder; sorting,
// the tracks table, the span tree and the stats are the builder's, the same for every format.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::trace {

// What a reader sees to decide whether an input is its own.
struct ProbeInput {
  std::string path;
  bool is_directory = false;
  uint64_t size = 0;      // bytes (files)
  std::string_view head;  // the first bytes of the file (up to 4 KiB), as stored (maybe compressed)
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;
  virtual std::string_view name() const = 0;         // "native", "json", ...
  virtual std::string_view description() const = 0;  // one line, for messages and --help
  // The names `--format` accepts for this reader: its name, and the producers it can be told to
  // read as (e.g. "kineto" for the JSON reader).
  virtual std::vector<std::string_view> formats() const { return {name()}; }
  // 0: not this reader's input. Otherwise how sure it is (a magic number: 100; text that merely
  // looks right: 10); the highest wins.
  virtual int probe(const ProbeInput& input) const = 0;
  // Bytes of memory the trace will take once read and structured (spans, attributes, strings, tree),
  // estimated from the input: open_trace refuses inputs that cannot fit.
  virtual uint64_t memory_estimate(const ProbeInput& input) const = 0;
  // Feeds the builder. `format` is "auto" or one of formats(). False with *error set to one line
  // naming the file, the offset or field, and what to do.
  virtual bool read(const ProbeInput& input, std::string_view format, TraceBuilder& builder,
                    std::string* error) const = 0;
};

// Registry. Registering a reader under a name already taken is a no-op (registration is idempotent).
void register_reader(std::unique_ptr<TraceReader> reader);
std::vector<const TraceReader*> registered_readers();
// The reader that reads `format` (a reader's name or one of its formats()); null if none.
const TraceReader* find_reader(std::string_view format);

struct OpenOptions {
  std::string format = "auto";  // a reader's name or format, or auto (probe)
  bool structure = true;        // build the tracks table and span tree now (once per open)
  SpanTreeOptions tree;
  // Refuse, with one line, inputs whose estimated memory exceeds what this process can get
  // (MemAvailable, the cgroup limit, RLIMIT_AS). STRATA_MEMORY_CHECK=0 in the environment turns the
  // check off for a try anyway.
  bool check_memory = true;
  // Threads that read the inputs (each into a trace of its own, appended in input order: the same
  // trace as one thread gives). 0: STRATA_JOBS when set, else the hardware threads; never more
  // than the inputs. 1 reads them one by one. With check_memory, inputs read one by one when a
  // parallel read would not fit (parallel_read_fits).
  unsigned jobs = 0;
  // Called once every input is read and before the builder sorts and structures the trace, with
  // the index of each input's first process (`strata merge` labels ranks and aligns clocks here).
  std::function<void(Trace&, std::span<const size_t> first_process_of_input)> before_finish;
};

// Opens one input (a file, or a directory of native .strata files) into *out (appending, as a merge
// when *out already holds spans). False with *error set to one line.
bool open_trace(const std::string& path, Trace* out, std::string* error, const OpenOptions& options = {});
// Opens several inputs into one trace through one builder: sorted once, one tree (several runs of a
// command, several ranks).
bool open_traces(std::span<const std::string> paths, Trace* out, std::string* error,
                 const OpenOptions& options = {});

// The reader open_trace would use for `path` (format "auto": by content). Null with *error set to
// one line when the input cannot be read or no reader recognizes it (commands that stream native
// files, such as `strata info`, ask first).
const TraceReader* reader_for(const std::string& path, const std::string& format, std::string* error);

// Memory this process can still get, in bytes (the smallest of MemAvailable, the cgroup's limit
// minus its usage, and RLIMIT_AS minus the current address space); UINT64_MAX when unknown.
uint64_t available_memory_bytes();
// Whether inputs whose readers estimate `estimate` bytes once loaded can be read in parallel with
// `available` bytes: a parallel read holds every input's text and part at once, up to half again
// the estimate (a serial read stays within it).
bool parallel_read_fits(uint64_t estimate, uint64_t available);

}  // namespace strata::trace
