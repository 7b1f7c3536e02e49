#include "import_fuzz_target.h"

#include <cstdlib>
#include <string>

#include "import/importer.h"
#include "import/ncu_csv.h"
#include "trace/span_tree.h"

namespace strata::fuzz {

void run_import(std::string_view bytes, const char* format) {
  trace::Trace trace;
  std::string error;
  import::ImportOptions options;
  options.format = format;
  if (import::import_buffer(bytes, "fuzz", &trace, &error, options)) {
    for (const SpanRecord& s : trace.spans)
      if (!time_in_range(s.start_ns) || !time_in_range(s.end_ns) || s.process >= trace.processes.size())
        std::abort();  // what every loaded trace guarantees the analyses
    trace::SpanTree tree = trace::build_span_tree(trace);
    if (tree.size() != trace.spans.size()) std::abort();
    for (size_t i = 0; i < tree.size(); ++i) (void)tree.ancestor_at_level(trace, i, 30);
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    std::abort();  // a failure must come with exactly one error line
  }
}

void run_ncu_csv(std::string_view bytes) {
  import::NcuProfile profile;
  std::string error;
  if (!import::parse_ncu_csv(bytes, "fuzz", &profile, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();
    return;
  }
  trace::Trace spans;
  import::add_ncu_spans(profile, "fuzz", &spans);
  if (spans.spans.size() != profile.kernels.size()) std::abort();
  for (const SpanRecord& s : spans.spans)
    if (!time_in_range(s.start_ns) || !time_in_range(s.end_ns) || s.end_ns < s.start_ns) std::abort();
  // The join, into a trace whose kernels carry the parsed names (and one more launch of each).
  trace::Trace trace;
  trace.add_process(trace::Process{});
  int64_t clock = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const import::NcuKernel& k : profile.kernels) {
      SpanRecord s;
      s.start_ns = clock++;
      s.end_ns = clock;
      s.name = trace.strings.intern(pass == 0 ? k.name : std::string(import::kernel_base_name(k.name)));
      s.activity = static_cast<uint8_t>(ActivityType::kKernel);
      trace.add_span(s);
    }
  const import::NcuJoinCounts c = import::join_ncu_metrics(profile, &trace);
  if (c.matched + c.ncu_unmatched != profile.kernels.size() ||
      c.matched + c.trace_without_metrics != trace.spans.size())
    std::abort();
  for (size_t i = 0; i < trace.spans.size(); ++i) (void)trace.attributes(i).size();
}

}  // namespace strata::fuzz
