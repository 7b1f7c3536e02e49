#include "import_fuzz_target.h"

#include <cstdlib>
#include <string>

#include "import/chrome_json.h"
#include "import/importer.h"
#include "import/ncu_csv.h"
#include "trace/span_tree.h"

namespace strata::fuzz {
namespace {

// Every field of an event, for comparing the two parse paths.
void append_event(const import::ChromeEvent& ev, std::string* out) {
  auto scalar = [&](const import::JsonScalar& s) {
    *out += std::to_string(s.kind) + "/" + std::to_string(s.i) + "/" + std::to_string(s.d) + "/";
    out->append(s.text);
    *out += '|';
  };
  *out += std::to_string(ev.index) + "@" + std::to_string(ev.offset) + (ev.is_object ? "o|" : "n|");
  for (std::string_view f : {ev.ph, ev.cat, ev.name, ev.bp, ev.scope}) {
    out->append(f);
    *out += '|';
  }
  scalar(ev.pid);
  scalar(ev.tid);
  scalar(ev.id);
  *out += (ev.ts_ns ? std::to_string(*ev.ts_ns) : "-") + (ev.ts_malformed ? "!|" : "|");
  *out += (ev.dur_ns ? std::to_string(*ev.dur_ns) : "-") + (ev.dur_malformed ? "!|" : "|");
  for (const import::ChromeArg& a : ev.args) {
    out->append(a.key);
    *out += '=';
    scalar(a.value);
  }
  *out += '\n';
}

// The Kineto event scanner against the generic On Demand path (the whole-document parse): what the
// scanner's parse accepts, the generic one accepts with the same events and document; a failure is
// one line. (The generic whole parse may accept damage that On Demand steps over and the windowed
// parse rejects, as for any windowed parse.)
void check_event_scanner(std::string_view bytes) {
  std::string events[2], errors[2];
  bool ok[2];
  import::ChromeDocument docs[2];
  for (int scanner = 0; scanner < 2; ++scanner) {
    import::set_chrome_event_scanner(scanner == 1);
    ok[scanner] = import::parse_chrome_trace(
        bytes, "fuzz", &docs[scanner],
        [&](const import::ChromeEvent& ev) { append_event(ev, &events[scanner]); }, &errors[scanner]);
  }
  import::set_chrome_event_scanner(true);
  if (ok[1] && (!ok[0] || events[0] != events[1] || docs[0].events != docs[1].events ||
                docs[0].metadata != docs[1].metadata))
    std::abort();
  if (!ok[1] && (errors[1].empty() || errors[1].find('\n') != std::string::npos)) std::abort();
  if (docs[0].events_scanned != 0 || docs[1].events_scanned > docs[1].events) std::abort();
}

}  // namespace

void run_import(std::string_view bytes, const char* format) {
  if (std::string_view(format) == "kineto") check_event_scanner(bytes);
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
