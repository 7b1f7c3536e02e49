// Options shared by `strata model`, `strata bench` and `strata lowerbound`: models, database,
// backend, data types, layouts, fusion. Parsing errors are one line naming the option. Argument
// parsing belongs to the CLI; the lowerbound rooms take the parsed structs (BenchOptions,
// MeasureOptions).
#pragma once

#include <string>
#include <vector>

#include "lowerbound/harness/backend.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/ir/layer_ir.h"

namespace strata::cli {

struct CommandOptions {
  std::vector<std::string> models;     // positional arguments
  std::string db_url;                  // --db (default: default_perf_db_url())
  lowerbound::BenchOptions bench;      // --backend --dtype --layout --fusion
  lowerbound::MeasureOptions measure;  // --repetitions --min-time-ms --threads --max-spread --attempts
  bool threads_given = false;          // --threads (else $OMP_NUM_THREADS, else 1)
  std::string output;                  // -o / --output
  std::string trace;                   // --trace
  std::string dot, svg;                // --dot --svg
  bool force = false;                  // --force: replace --dot/--svg files that exist
  std::string format = "text";         // --format text|csv|json
  size_t top = 10;                     // --top
  bool layers = false;                 // --layers
};

class CommandLine;

// Which of the shared options a command takes (each command only those it reads).
enum : unsigned {
  kFormatOption = 1,     // -f/--format text|csv|json
  kLayersOption = 2,     // --layers
  kBenchOptions = 4,     // --backend --dtype --layout --fusion
  kDbOptions = 8,        // --db --system-tag --threads
  kMeasureOptions = 16,  // --repetitions --min-time-ms --max-spread --attempts --recheck
  kOutputOption = 32,    // -o/--output DIR
  kTraceOptions = 64,    // --trace --top --dot --svg
  kModelOption = 128,    // the model as --model MODEL.onnx, not as positionals (`strata report TRACE`)
  kTopOption = 256,      // --top alone (kTraceOptions includes it)
};

// Declares the MODEL positionals and the `groups` of options on `cl`, and parses argv (argv[0]: the
// command, or the bench mode). -1 to go on, else the exit code (0 after --help, 2 after a usage error).
int parse_command_options(CommandLine& cl, int argc, char** argv, unsigned groups, CommandOptions* out);

// Loads every model; false with the first error (file + what is wrong).
bool load_models(const std::vector<std::string>& paths, std::vector<lowerbound::LayerModel>* models,
                 std::string* error);

std::string join(const std::vector<std::string>& items, const std::string& sep);

}  // namespace strata::cli
