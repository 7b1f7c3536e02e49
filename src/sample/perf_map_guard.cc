#include "sample/perf_map_guard.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/env_vars.h"
#include "sample/jit_map.h"

namespace strata::sample {
namespace {

using FopenFn = FILE* (*)(const char*, const char*);
std::atomic<FopenFn> g_next_fopen{nullptr}, g_next_fopen64{nullptr};

std::atomic<pid_t> g_created_for{0};  // the pid whose map this process created
std::atomic<pid_t> g_refused_for{0};  // the pid whose map this process refused (said once)
std::atomic<uint64_t> g_refused{0};

pid_t pid_from_env(const char* name) {
  const char* value = getenv(name);
  return value != nullptr ? static_cast<pid_t>(std::atoi(value)) : 0;
}

// Whether `strata record` asked this process tree for perf maps (cmd_record.cc).
bool maps_requested() {
  const char* owned = getenv(env::kSampleJitMapOwned);
  return owned != nullptr && owned[0] == '1';
}

bool created_here(pid_t pid) {
  return g_created_for.load() == pid || pid_from_env(env::kSampleJitMapPid) == pid;
}

// Opening for writing (w, a, or +) this process's own perf map.
bool guarded(const char* path, const char* mode, pid_t pid) {
  if (path == nullptr || mode == nullptr || std::strncmp(path, "/tmp/perf-", 10) != 0) return false;
  if (mode[0] == 'r' && std::strchr(mode, '+') == nullptr) return false;
  return maps_requested() && JitMap::perf_map_path(pid) == path;
}

void refuse(pid_t pid, const std::string& why) {
  g_refused.fetch_add(1);
  if (g_refused_for.exchange(pid) != pid)
    std::fprintf(stderr, "strata: %s; oneDNN's JIT code is not named in process %d\n", why.c_str(),
                 static_cast<int>(pid));
}

// A descriptor for this process's map opened as `mode` asks, or -1 (errno set) when the name is not
// one Strata created.
int open_own_map(const char* path, const char* mode, pid_t pid) {
  const bool append = mode[0] == 'a';
  if (created_here(pid)) {
    const int flags = (std::strchr(mode, '+') != nullptr ? O_RDWR : O_WRONLY) | O_NOFOLLOW | O_CLOEXEC |
                      (mode[0] == 'w' ? O_TRUNC : 0) | (append ? O_APPEND : 0);
    const int fd = open(path, flags);
    struct stat st {};
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1)
      return fd;
    if (fd >= 0) close(fd);
    if (fd >= 0 || errno != ENOENT) {
      refuse(pid, std::string(path) + ": no longer the file strata created");
      errno = EEXIST;
      return -1;
    }
    // Removed since (the sampler removes it when it stops): created anew below.
  }
  std::string why;
  const int fd = JitMap::create_perf_map(pid, &why);
  if (fd < 0) {
    refuse(pid, why);
    errno = EEXIST;
    return -1;
  }
  if (append) fcntl(fd, F_SETFL, O_APPEND);
  g_created_for.store(pid);
  return fd;
}

FILE* guarded_fopen(std::atomic<FopenFn>& next_slot, const char* name, const char* path, const char* mode) {
  const pid_t pid = getpid();
  if (guarded(path, mode, pid)) {
    const int fd = open_own_map(path, mode, pid);
    if (fd < 0) return nullptr;
    FILE* file = fdopen(fd, mode);
    if (file == nullptr) close(fd);
    return file;
  }
  FopenFn next = next_slot.load(std::memory_order_acquire);
  if (next == nullptr) {
    next = reinterpret_cast<FopenFn>(dlsym(RTLD_NEXT, name));
    next_slot.store(next, std::memory_order_release);
  }
  if (next == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  return next(path, mode);
}

}  // namespace

uint64_t perf_maps_refused() {
  const pid_t pid = getpid();
  return g_refused.load() + (pid_from_env(env::kSampleJitMapRefused) == pid ? 1 : 0);
}

void remove_own_perf_map() {
  const pid_t pid = getpid();
  if (!maps_requested() || !created_here(pid) || g_refused_for.load() == pid) return;
  const std::string path = JitMap::perf_map_path(pid);
  struct stat st {};
  // In the sticky /tmp only its owner can rename or remove the file created for this pid.
  if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1)
    unlink(path.c_str());
}

}  // namespace strata::sample

// Interposed (the library is preloaded): every fopen of the process, the C library's for all but
// this process's own perf map opened for writing.
extern "C" __attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
  using namespace strata::sample;
  return guarded_fopen(g_next_fopen, "fopen", path, mode);
}

extern "C" __attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) {
  using namespace strata::sample;
  return guarded_fopen(g_next_fopen64, "fopen64", path, mode);
}
