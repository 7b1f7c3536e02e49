// strata merge TRACE... -o JOB.strata: the traces of the ranks of one job into one trace, one
// process group per rank, the ranks' clocks aligned on the reference rank's (trace/rank_align.h).
#include <cstdio>
#include <map>
#include <string>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/text_escape.h"
#include "trace/rank_align.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

namespace strata::cli {
namespace {

// Each input's processes get the input's rank when they carry none; two inputs claiming one rank
// are refused (their spans would mix in one process group).
bool label_ranks(trace::Trace& trace, std::span<const size_t> first, std::span<const std::string> paths,
                 std::string* error) {
  std::map<int64_t, size_t> input_of_rank;
  for (size_t k = 0; k < first.size(); ++k) {
    const size_t end = k + 1 < first.size() ? first[k + 1] : trace.processes.size();
    int64_t rank = -1;
    for (size_t p = first[k]; p < end; ++p) rank = std::max(rank, trace::process_rank(trace.processes[p]));
    const bool stated = rank >= 0;
    if (!stated) rank = static_cast<int64_t>(k);
    auto [it, fresh] = input_of_rank.emplace(rank, k);
    if (!fresh) {
      *error = paths[k] + ": rank " + std::to_string(rank) + " is also the rank of " + paths[it->second] +
               "; give each rank's trace once";
      return false;
    }
    for (size_t p = first[k]; p < end; ++p) {
      trace::Process& proc = trace.processes[p];
      if (!stated) {
        proc.properties.set_int("rank", rank);
        proc.properties.set("rank.source", "input order");
      }
      proc.properties.set("merge.input", paths[k]);
    }
  }
  return true;
}

}  // namespace

int run_merge(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string output, align = "auto";
  int64_t reference_rank = 0;
  bool force = false;
  CommandLine cl("merge",
                 "Merge the traces of the ranks of one job into one trace, one process group per rank, the "
                 "ranks' clocks aligned on the reference rank's.");
  cl.app()
      .add_option(
          "TRACE", inputs,
          "one trace per rank, of any format this build reads (native, Kineto/PyTorch JSON, ...); its rank "
          "is what the trace says (strata record: RANK/SLURM_PROCID/OMPI_COMM_WORLD_RANK/PMI_RANK; "
          "Kineto: distributedInfo.rank), else its position on the command line")
      ->required();
  cl.add_output(&output, "the merged native trace (required; not gzip'd: readers seek in it)")->required();
  cl.add_force(&force);
  cl.app()
      .add_option(
          "--align", align,
          "auto: fit each rank's clock offset and drift to the reference rank from the ends of matched "
          "collective kernels, except ranks on the reference rank's host (one clock); always: also "
          "those; none: keep every time as recorded (default auto)")
      ->check(CLI::IsMember({"auto", "always", "none"}))
      ->type_name("MODE");
  cl.app()
      .add_option("--reference-rank", reference_rank, "the rank whose clock is kept (default 0)")
      ->check(number_in(0, 1e9, "a rank (an integer >= 0)"))
      ->type_name("N");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  if (output == "-")
    return cl.usage_error("-o OUT must be a file (a native trace is not written to standard output)");
  if (std::string error; refuse_gzip_native(output, &error)) return cl.usage_error(error);

  std::string error;
  if (!check_output_target(output, force, &error)) return fail("merge", error, 1);
  trace::Trace trace;
  trace::OpenOptions open;
  open.structure = false;
  std::string label_error;
  std::vector<trace::RankClock> clocks;
  size_t renumbered = 0;
  open.before_finish = [&](trace::Trace& t, std::span<const size_t> first) {
    if (!label_ranks(t, first, inputs, &label_error)) return;
    renumbered = trace::make_pids_unique_across_ranks(&t);
    if (align == "none") return;
    clocks = trace::align_rank_clocks(
        &t, {.reference_rank = reference_rank, .same_host_shares_clock = align == "auto", .apply = true});
  };
  if (!open_inputs(inputs, &trace, &error, open)) return fail("merge", error, 1);
  if (!label_error.empty()) return fail("merge", label_error, 1);
  print_warnings(trace.warnings);

  OutputFile out;
  {
    Progress progress("merge");
    progress.phase("writing " + output);
    if (!out.begin(output, force, &error) || !trace::save_trace(trace, out.temp_path(), &error, 3) ||
        !out.commit(&error))
      return fail("merge", out.about_target(error), 1);
  }
  if (is_quiet()) return 0;
  std::printf("%s: %zu ranks, %zu processes, %zu spans\n", output.c_str(), inputs.size(),
              trace.processes.size(), trace.spans.size());
  if (renumbered > 0)
    std::printf(
        "%zu processes had a pid another rank has: renumbered (pid + (rank + 1) * 2^22; the recorded "
        "pid is kept as pid.recorded)\n",
        renumbered);
  if (!clocks.empty()) {
    std::printf("%6s  %-16s %-12s %16s %12s %14s %8s %8s %14s\n", "rank", "host", "clock", "offset_us",
                "drift_ppm", "uncertainty_us", "matched", "rejected", "residual_p90_us");
    for (const trace::RankClock& c : clocks) {
      char bound[32] = "unknown";
      if (c.uncertainty_ns >= 0) std::snprintf(bound, sizeof(bound), "+-%.3f", c.uncertainty_ns / 1e3);
      std::printf("%6lld  %-16s %-12s %16.3f %12.3f %14s %8u %8u %14.3f\n", static_cast<long long>(c.rank),
                  exporter::escape_terminal(c.host.empty() ? "-" : c.host).c_str(), c.method.c_str(),
                  c.offset_ns / 1e3, c.drift_ppm, bound, c.matched, c.rejected,
                  c.residual_p90_ns >= 0 ? c.residual_p90_ns / 1e3 : -1.0);
    }
  }
  return 0;
}

}  // namespace strata::cli
