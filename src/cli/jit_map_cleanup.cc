#include "cli/jit_map_cleanup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/env_vars.h"
#include "export/text_escape.h"
#include "sample/jit_map.h"

namespace strata::cli {
namespace {

// The pid a part file is named after ("1234.strata", "1234.2.strata"); 0 when it names none.
pid_t pid_of_part(const std::string& name) {
  int64_t pid = 0;
  size_t k = 0;
  for (; k < name.size() && name[k] >= '0' && name[k] <= '9' && pid <= INT32_MAX; ++k)
    pid = pid * 10 + (name[k] - '0');
  if (k == 0 || k == name.size() || name[k] != '.' || pid <= 0 || pid > INT32_MAX) return 0;
  return static_cast<pid_t>(pid);
}

}  // namespace

void ask_for_jit_map_in_child() {
  const pid_t pid = getpid();
  std::string why;
  const int fd = sample::JitMap::create_perf_map(pid, &why);
  if (fd < 0) {
    std::fprintf(stderr, "strata record: %s; oneDNN's JIT code is not named in process %d\n",
                 exporter::escape_terminal(why).c_str(), static_cast<int>(pid));
    setenv(env::kSampleJitMapRefused, std::to_string(pid).c_str(), 1);
    return;
  }
  close(fd);
  setenv("ONEDNN_JIT_PROFILE", "2", 1);
  setenv("DNNL_JIT_PROFILE", "2", 1);
  setenv(env::kSampleJitMapOwned, "1", 1);
  setenv(env::kSampleJitMapPid, std::to_string(pid).c_str(), 1);
}

int remove_leftover_jit_maps(const std::vector<std::string>& part_names, int64_t since_realtime_ns,
                             const std::string& map_dir) {
  int removed = 0;
  for (const std::string& name : part_names) {
    const pid_t pid = pid_of_part(name);
    if (pid == 0) continue;
    // perf's convention, the one oneDNN follows (sample/jit_map.h).
    const std::string path = map_dir + "/perf-" + std::to_string(pid) + ".map";
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;  // removed by its process, or never written
    const int64_t modified_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 || modified_ns < since_realtime_ns)
      continue;
    // In a sticky /tmp only its owner can replace the name between the check and the unlink, and
    // unlink removes a name without following it.
    if (unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace strata::cli
