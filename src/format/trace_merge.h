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
  uint64_t skipped_chunks = 0;  // chunks of a stream id that an earlier input already wrote
};

// `record` (may be empty) is appended as a Record chunk after all inputs.
MergeResult merge_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                              const Properties& record);

// The per-process files of one run in a directory the caller created privately and holds open
// (`dir_fd`; `dir_name` only names it in messages): the *.strata entries that are regular files
// of this user, in name order. Anything else found there (links, other users' files, devices) is
// never opened and is listed in `skipped`, one line each.
struct PartFiles {
  std::vector<std::string> names;
  std::vector<std::string> skipped;
};
PartFiles list_part_files(int dir_fd, const std::string& dir_name);

// Merges the listed parts, each opened relative to `dir_fd` without following links and checked
// again once open (a regular file of this user). `skipped` lines become warnings of the merge.
MergeResult merge_part_files(int dir_fd, const std::string& dir_name, const PartFiles& parts,
                             const std::string& output, const Properties& record);
// The same, appended to an existing trace file: a STRATA_OUTPUT run's owner process adds its
// descendants' streams (written into its private directory) to its own at its end.
MergeResult append_part_files(int dir_fd, const std::string& dir_name, const PartFiles& parts,
                              const std::string& output, const Properties& record);

}  // namespace strata::format
