// `strata attach PID`: continuous profiling of a running, unmodified process, from the outside. The
// attaching process opens perf_event on the target's threads (those it starts later are inherited),
// reads the rings, unwinds and reads CPython 3.11 frames with process_vm_readv, and writes one
// self-contained trace file per epoch (DIR/<pid>-epoch-NNNNNN.strata, written to a new temporary
// name and renamed without replacing anything, so a file with that name is always complete). DIR is
// used only through its descriptor (opened and checked by the caller: cli/safe_files.h OutputDir).
// Numbering goes on after this user's epoch files of the same pid already there; entries of other
// users, links and other non-files are left alone and counted. Under a disk budget the oldest epochs
// this attach wrote are removed (and counted in the next files and the closing line); nothing else
// is. The target is never stopped, traced or written to; its exit ends the attach after writing the
// last epoch.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace strata::sample {

struct AttachOptions {
  int pid = 0;
  int hz = 99;
  int64_t epoch_ns = 60'000'000'000;
  int64_t duration_ns = 0;      // 0: until the target exits (or SIGINT/SIGTERM)
  uint64_t max_disk_bytes = 0;  // 0: no budget
  int dir_fd = -1;              // the output directory, open (written through this descriptor only)
  std::string dir;              // its name, for messages
  bool dwarf = false;
  uint32_t stack_bytes = 16384;
  bool python = true;
  bool timeline = false;  // per-sample times (larger files; counts are always written)
};

struct AttachResult {
  uint32_t epochs_written = 0;
  uint32_t epochs_removed = 0;
  uint64_t bytes_removed = 0;
  uint64_t bytes_kept = 0;
  uint64_t samples = 0;
  std::string mode;
  std::string python_note;
  std::string end_reason;        // "target exited", "duration reached", "stopped by signal"
  uint64_t lost = 0;             // samples lost, all causes
  uint32_t foreign_entries = 0;  // epoch names in DIR that are not this user's files: left alone
};

// Runs until the target exits, the duration is reached or *stop becomes true. False with *error
// (one line) when attaching failed; epochs already written stay.
bool run_attach(const AttachOptions& options, std::atomic<bool>* stop, AttachResult* result,
                std::string* error);

}  // namespace strata::sample
