// Merges per-process trace files into one file by copying their valid chunks verbatim (streams
// stay apart by stream id). Damaged or cut-off input is reported, never fatal for the others.
#pragma once

#include <string>
#include <vector>

#include "format/properties.h"

namespace strata::format {

struct MergeResult {
  bool ok = false;
  std::string error;                  // set when the output could not be written
  std::vector<std::string> warnings;  // per input: truncated tails, corrupt chunks, unreadable files
  uint64_t chunks = 0;
  uint64_t truncated_inputs = 0;
};

// `record` (may be empty) is appended as a Record chunk after all inputs.
MergeResult merge_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                              const Properties& record);
// The same, appended to an existing trace file (the STRATA_OUTPUT owner adds its descendants'
// streams to its own at exit).
MergeResult append_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                               const Properties& record);

}  // namespace strata::format
