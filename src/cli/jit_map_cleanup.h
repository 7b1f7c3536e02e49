// The perf maps (/tmp/perf-PID.map) that `strata record --sample` asked oneDNN to write so that the
// sampler can name JIT kernels: removed once the recorded processes have ended.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::cli {

// Each recorded process's sampler removes its own map when it stops (sample/in_process.cc). That
// does not run when a process dies by SIGKILL, when its exit outlives the stop deadline, or when
// its sampler never started: the recorder removes what is left, for the processes that wrote a file
// of this run (`part_names`, "PID.strata"), and only a regular file of this user modified since
// `since_realtime_ns` (a map of another process that reused a pid earlier is left alone).
// Returns how many it removed.
// In the recorded command's process, before exec (its pid is the command's): oneDNN opens
// /tmp/perf-PID.map with fopen "w+", following a link planted there. The map is created here first,
// exclusively (sample::JitMap::create_perf_map), and only then asked for (ONEDNN_JIT_PROFILE=2 and
// the STRATA_SAMPLE_JIT_MAP_* variables the sampler reads); when the name is taken it is not asked
// for, which is said on stderr and counted by the process's sampler (STRATA_SAMPLE_JIT_MAP_REFUSED).
// The processes the command forks or runs get theirs from libstrata_sample's fopen guard
// (sample/perf_map_guard.h).
void ask_for_jit_map_in_child();

int remove_leftover_jit_maps(const std::vector<std::string>& part_names, int64_t since_realtime_ns,
                             const std::string& map_dir = "/tmp");

}  // namespace strata::cli
