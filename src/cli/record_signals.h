// How `strata record` handles signals while its command runs (the reasons are in record_signals.cc).
#pragma once

#include <sys/types.h>

namespace strata::cli {

// In the recorder, before the first command starts: terminal signals ignored, others forwarded.
void install_signal_handling();
// The process forwarded signals go to (0: none).
void set_forwarded_child(pid_t child);
// In the command's process before exec: the recorder's start-up dispositions, and death with it.
void prepare_child_signals(pid_t recorder);

}  // namespace strata::cli
