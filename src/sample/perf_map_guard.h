// The perf map `strata record --sample` asks oneDNN for (ONEDNN_JIT_PROFILE=2, cmd_record.cc):
// oneDNN opens /tmp/perf-<pid>.map with fopen(path, "w+"), which follows a link planted at that
// name and truncates whatever it points at. libstrata_sample.so interposes fopen and fopen64: in a
// process of a recording that asked for the map, opening this process's own map for writing is
// served here. The file is the one the recorder created for this pid before exec, or is created
// now, exclusively (JitMap::create_perf_map: O_CREAT|O_EXCL|O_NOFOLLOW, 0600): a process forked
// from the recorded one (a DataLoader worker, whose oneDNN opens the map of its own pid) and a
// program the recorded one runs get theirs this way. When the name is taken (a file or link another
// user planted) the open fails as fopen would, so oneDNN turns its perf map off in that process;
// that is said on stderr once and counted (sample.jit_maps_refused). Every other fopen goes straight
// to the C library.
#pragma once

#include <cstdint>

namespace strata::sample {

// Perf maps refused in this process (the recorder's refusal before exec included, when it was for
// this pid).
uint64_t perf_maps_refused();

// Removes this process's perf map when this process (or the recorder, for this pid) created it:
// the sampler reads it while it names frames, and nothing needs it after. A name Strata did not
// create is never removed.
void remove_own_perf_map();

}  // namespace strata::sample
