// open_traces with several reading threads gives the trace one thread gives: every process field,
// span, attribute, string id, record property, stat and warning, in the same order (the parallel
// read's parts are appended in input order, trace_append.h).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "import/importer.h"
#include "trace/span_tree.h"
#include "trace/trace_reader.h"

namespace strata::trace {
namespace {

const std::string kData = std::string(STRATA_SOURCE_DIR) + "/tests/";

// Everything open_traces fills, as text: two traces are the same when their dumps are.
std::string dump(const Trace& t) {
  std::ostringstream out;
  for (size_t id = 0; id < t.strings.size(); ++id)
    out << "string " << t.strings.get(static_cast<uint32_t>(id)) << "\n";
  for (const Process& p : t.processes) {
    out << "process " << p.stream_id << " " << p.pid << " " << p.ppid << " " << p.host << " "
        << p.command_line << " " << p.trace_id << " " << p.start_realtime_ns << " " << p.start_monotonic_ns
        << " " << p.ended_cleanly << " " << p.span_count << " " << p.clock_snapshots.size() << "\n";
    for (const auto& [k, v] : p.properties.entries()) out << "  property " << k << "=" << v << "\n";
    for (const auto& [tid, name] : p.thread_names) out << "  thread " << tid << " " << name << "\n";
    for (const auto& [stat, n] : p.stats.nonzero())
      out << "  stat " << static_cast<int>(stat) << " " << n << "\n";
  }
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const SpanRecord& s = t.spans[i];
    out << "span " << s.span_id << " " << s.parent_id << " " << s.start_ns << " " << s.end_ns << " "
        << s.correlation_id << " " << s.name << ":" << t.name(s) << " " << s.tid << " " << s.stream << " "
        << s.device << " " << s.process << " " << int(s.level) << int(s.kind) << int(s.clock) << int(s.flags)
        << int(s.activity) << " parent " << t.tree().parent(i) << "\n";
    for (const AttrRecord& a : t.attributes(i))
      out << "  attr " << a.key << " " << int(a.type) << " " << a.value.u << "\n";
  }
  for (const auto& [k, v] : t.record.entries()) out << "record " << k << "=" << v << "\n";
  for (const auto& [stat, n] : t.stats.nonzero())
    out << "stat " << static_cast<int>(stat) << " " << n << "\n";
  for (const auto& [key, n] : t.stats.unregistered()) out << "stat " << key << " " << n << "\n";
  for (const std::string& w : t.warnings) out << "warning " << w << "\n";
  return out.str();
}

// The first line where two dumps differ ("" when they are the same). Not EXPECT_EQ on the dumps:
// gtest's diff of two multi-megabyte strings takes memory quadratic in their lines.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string line_a, line_b;
  for (size_t n = 1;; ++n) {
    const bool more_a = static_cast<bool>(std::getline(x, line_a));
    const bool more_b = static_cast<bool>(std::getline(y, line_b));
    if (!more_a && !more_b) return "";
    if (more_a != more_b || line_a != line_b)
      return "line " + std::to_string(n) + ": '" + (more_a ? line_a : "(end)") + "' vs '" +
             (more_b ? line_b : "(end)") + "'";
  }
}

std::string open_with(const std::vector<std::string>& paths, unsigned jobs) {
  Trace trace;
  std::string error;
  OpenOptions options;
  options.jobs = jobs;
  EXPECT_TRUE(open_traces(paths, &trace, &error, options)) << error;
  EXPECT_GT(trace.spans.size(), 0u);
  return dump(trace);
}

TEST(ParallelOpen, ThreadsGiveTheTraceOneThreadGives) {
  import::register_readers();
  const std::string rank0 = kData + "data/kineto/multirank_rank0.json.gz";
  const std::string rank1 = kData + "data/kineto/multirank_rank1.json.gz";
  const std::string native = kData + "golden/inputs/gpu_model.trace";
  const std::string alexnet = kData + "golden/inputs/a100_alexnet_train.json.gz";
  const std::string old_format = kData + "data/format_1_0/multirank_rank0.trace";
  // Ranks; native and imported mixed (the importers number stream ids by position); the same file
  // twice (repeated runs: the second one's strings are all known already).
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{rank0, rank1},
        std::vector<std::string>{native, rank1, alexnet, old_format, rank0},
        std::vector<std::string>{rank1, rank1, native, native}}) {
    const std::string serial = open_with(inputs, 1);
    EXPECT_EQ(first_difference(serial, open_with(inputs, 2)), "");
    EXPECT_EQ(first_difference(serial, open_with(inputs, 4)), "");
  }
}

TEST(ParallelOpen, TheFirstFailingInputInOrderIsTheError) {
  import::register_readers();
  const std::string good = kData + "data/kineto/multirank_rank0.json.gz";
  const std::string bad = kData + "golden/inputs/README.md";  // no reader reads it
  std::string serial_error, parallel_error;
  Trace a, b;
  OpenOptions one, four;
  one.jobs = 1;
  four.jobs = 4;
  const std::vector<std::string> inputs = {good, bad, good};
  EXPECT_FALSE(open_traces(inputs, &a, &serial_error, one));
  EXPECT_FALSE(open_traces(inputs, &b, &parallel_error, four));
  EXPECT_FALSE(serial_error.empty());
  EXPECT_EQ(parallel_error, serial_error);
}

}  // namespace
}  // namespace strata::trace
