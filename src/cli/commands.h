// Subcommands of the `strata` tool. Each lives in its own cmd_*.cc and is listed in main.cc.
#pragma once

namespace strata::cli {

// argv[0] is the subcommand name. Returns the process exit code.
int run_record(int argc, char** argv);
int run_info(int argc, char** argv);
int run_export(int argc, char** argv);
int run_import(int argc, char** argv);
int run_analyze(int argc, char** argv);
int run_iterations(int argc, char** argv);
int run_summary(int argc, char** argv);
int run_model(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_lowerbound(int argc, char** argv);
int run_profile(int argc, char** argv);
int run_attach(int argc, char** argv);
int run_merge(int argc, char** argv);
int run_sql(int argc, char** argv);
int run_diff(int argc, char** argv);
int run_report(int argc, char** argv);  // only with STRATA_HAVE_REPORT (src/report)
int run_annotate(int argc, char** argv);

}  // namespace strata::cli
