// strata annotate TRACE FUNCTION [--mcpu CPU] [--no-mca] [--format F]: the per-instruction view of one
// sampled function (DCPI): its instructions (capstone) with their samples, grouped into basic
// blocks; per block llvm-mca's static cycle estimate, the execution frequency F = S / C, and the
// blocks whose samples far exceed their static cost ranked as dynamic-stall culprits, with
// cache-miss and branch-miss samples per block where the trace has PMU events.
#include <iostream>
#include <sstream>
#include <string>

#include "annotate/annotate.h"
#include "annotate/trace_function.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "trace/trace_loader.h"

namespace strata::cli {
namespace {

// Names and instruction text come from the trace and the profiled binaries: escaped for the
// terminal, line by line.
void print_escaped(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::printf("%s\n", exporter::escape_terminal(std::string_view(text).substr(start, nl - start)).c_str());
    start = nl + 1;
  }
}

}  // namespace

int run_annotate(int argc, char** argv) {
  std::string path, function, format_text = "table", output, mcpu = "native";
  double culprit_ratio = 2.0;
  bool no_mca = false, force = false;
  CommandLine cl(
      "annotate",
      "Per-instruction view of one sampled function (DCPI): its instructions with their samples, "
      "grouped into basic blocks; per block a static cycle estimate from llvm-mca, the estimated "
      "execution frequency F = samples / cycles, and the blocks whose samples far exceed their static "
      "cost ranked as dynamic-stall culprits (cache-miss and branch-miss samples per block where the "
      "PMU gave them).");
  cl.app().add_option("TRACE", path, "a trace recorded with `strata record --sample`")->required();
  cl.app()
      .add_option("FUNCTION", function,
                  "the function, as `strata profile` names it (a C++ name may leave out its parameter list)")
      ->required();
  cl.app()
      .add_option("--mcpu", mcpu,
                  "the CPU llvm-mca models (default native: this machine's; llvm-mca -mcpu=help lists them)")
      ->type_name("CPU");
  cl.app().add_flag("--no-mca", no_mca, "no static cost model: samples per instruction and block only");
  cl.app()
      .add_option("--culprit-ratio", culprit_ratio,
                  "a culprit's F must be at least this multiple of the least-stalled block's F (default 2)")
      ->check(number_in(1.0, 1e6, "the ratio"))
      ->type_name("R");
  cl.add_format(&format_text, {"table", "csv", "json"}, "table (default), csv, json");
  cl.add_output(&output,
                "write the output to FILE; never through a symbolic link; a name ending in .gz is gzip'd");
  cl.add_force(&force);
  cl.set_extra_argument_note("one trace and one function at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  exporter::TableFormat format;
  exporter::parse_table_format(format_text, &format);

  std::string error;
  if (!output.empty() && !check_output_target(output, force, &error)) return fail("annotate", error, 1);
  trace::Trace trace;
  if (!trace::load_trace(path, &trace, &error)) return fail("annotate", error, 1);
  print_warnings(trace.warnings);
  symbolize::Symbolizer symbolizer;
  annotate::FunctionSamples samples;
  if (!annotate::find_function_samples(trace, function, symbolizer, &samples, &error))
    return fail("annotate", path + ": " + error, 1);
  auto disassembler = annotate::make_capstone_disassembler();
  std::unique_ptr<annotate::CostModel> costs;
  if (!no_mca) {
    annotate::LlvmMcaOptions mca;
    mca.mcpu = mcpu;
    costs = annotate::make_llvm_mca(mca);
  }
  annotate::AnnotateOptions options;
  options.culprit_ratio = culprit_ratio;
  annotate::Annotation annotation;
  if (!annotate::annotate_function(samples, *disassembler, costs.get(), options, &annotation, &error))
    return fail("annotate", error, 1);
  const std::vector<table::Table> tables = annotate::annotation_tables(annotation);
  std::ostringstream text;
  exporter::render_tables(tables, format, text);
  // The table and JSON carry the notes (what was absent, what estimated the cycles); CSV cannot.
  if (format == exporter::TableFormat::kCsv && !is_quiet())
    for (const std::string& note : tables[0].notes)
      std::fprintf(stderr, "note: %s\n", exporter::escape_terminal(note).c_str());
  if (output.empty()) {
    if (format == exporter::TableFormat::kText)
      print_escaped(text.str());
    else
      std::fwrite(text.str().data(), 1, text.str().size(), stdout);
    return 0;
  }
  Output target;
  OutputStream file;
  if (!target.begin(output, force, &error) || !file.open(target.path(), output, &error))
    return fail("annotate", error, 1);
  file.stream() << text.str();
  if (!file.finish(&error) || !target.commit(&error)) return fail("annotate", error, 1);
  return 0;
}

}  // namespace strata::cli
