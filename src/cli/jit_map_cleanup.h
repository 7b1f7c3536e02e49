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
int remove_leftover_jit_maps(const std::vector<std::string>& part_names, int64_t since_realtime_ns,
                             const std::string& map_dir = "/tmp");

}  // namespace strata::cli
