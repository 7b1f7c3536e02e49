// Recording started by the environment (LD_PRELOAD by `strata record`, or any process linked with
// libstrata): STRATA_OUTPUT_DIR (one file per process, `strata record`'s parts directory) or
// STRATA_OUTPUT (one file for the process tree). Forked children start at their first event.
//
// STRATA_OUTPUT: the process that finds it (and no STRATA_OUTPUT_DIR) owns the output file and
// writes its own stream there. For its descendants it creates a private directory next to the file
// (mkdtemp: 0700, a fresh name) and exports STRATA_OUTPUT_DIR and STRATA_OUTPUT_OWNER, so every
// descendant writes its own stream there, created exclusively; when the owner stops, it appends
// those streams to the output file (format::append_trace_files: chunks copied verbatim, as
// `strata record` merges). Before this, children opened the same file with O_TRUNC and overwrote
// each other's chunks.
//
// Everything is read with secure_getenv: in a setuid/setgid process the caller's environment does
// not choose where the process (root) writes; such a program may still call strata_start itself.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "collect/runtime_internal.h"
#include "core/env_vars.h"
#include "core/level.h"
#include "format/chunk_reader.h"
#include "format/trace_merge.h"

namespace strata::collect::rt {

std::atomic<bool> g_pending_fork_start{false};

namespace {

bool g_started_from_env = false;
std::optional<TraceContext> g_fork_context;  // a forked child's parent: the span open at fork

// The process that owns a STRATA_OUTPUT file (and its descendants' private parts directory). In
// static storage with no destructor registered: an object destroyed by an exit handler could be gone
// before the handler that needs it runs.
struct OutputOwner {
  std::string output;
  std::string parts_dir;
  pid_t pid = 0;
};
alignas(OutputOwner) unsigned char g_owner_storage[sizeof(OutputOwner)];
OutputOwner* g_owner = nullptr;

void clear_owner() {
  if (g_owner != nullptr) g_owner->~OutputOwner();
  g_owner = nullptr;
}

void set_owner(const std::string& output, const std::string& parts_dir) {
  clear_owner();
  g_owner = new (g_owner_storage) OutputOwner{output, parts_dir, getpid()};
}

constexpr const char* kOwnerVar = env::kOutputOwner;

size_t env_size(const char* name, size_t fallback) {
  const char* v = secure_getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  unsigned long long n = strtoull(v, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? static_cast<size_t>(n) : fallback;
}

const char* nonempty(const char* v) { return v != nullptr && *v != '\0' ? v : nullptr; }

// The output file's owner: a private directory for the descendants' streams, announced to them
// through the environment. False (with a message) when it cannot be made: then no descendant
// records, rather than one truncating the owner's file.
bool become_output_owner(const std::string& output) {
  std::string tmpl = output + ".parts-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr,
                 "strata: %s: cannot create a directory for child processes' traces (%s); child processes "
                 "will not be recorded\n",
                 tmpl.c_str(), std::strerror(errno));
    unsetenv(env::kOutput);
    return false;
  }
  set_owner(output, tmpl);
  setenv(env::kOutputDir, tmpl.c_str(), 1);
  setenv(kOwnerVar, std::to_string(getpid()).c_str(), 1);
  return true;
}

void give_up_ownership() {
  if (!g_owner || g_owner->pid != getpid()) return;
  rmdir(g_owner->parts_dir.c_str());
  unsetenv(env::kOutputDir);
  unsetenv(kOwnerVar);
  unsetenv(env::kOutput);
  clear_owner();
}

}  // namespace

std::optional<SessionConfig> config_from_env(bool after_fork) {
  const char* file = nonempty(secure_getenv(env::kOutput));
  const char* dir = nonempty(secure_getenv(env::kOutputDir));
  if (file == nullptr && dir == nullptr) {
    if (getauxval(AT_SECURE) != 0 && (nonempty(getenv(env::kOutput)) || nonempty(getenv(env::kOutputDir))))
      std::fprintf(stderr,
                   "strata: STRATA_OUTPUT/STRATA_OUTPUT_DIR ignored in a setuid or setgid program (the caller's "
                   "environment does not choose where it writes); the program may call strata_start itself\n");
    return std::nullopt;
  }
  SessionConfig config;
  const pid_t pid = getpid();
  const char* owner = nonempty(secure_getenv(kOwnerVar));
  if (file != nullptr && dir != nullptr && owner != nullptr && std::to_string(pid) == owner && !after_fork) {
    // The owner exec'd a new image: same pid, same output; its earlier chunks stay, ours follow.
    config.path = file;
    config.open_mode = SessionConfig::OpenMode::kAppend;
    set_owner(file, dir);
  } else if (dir != nullptr) {
    config.path = std::string(dir) + "/" + std::to_string(pid) + ".strata";
    config.open_mode = SessionConfig::OpenMode::kCreateNew;
  } else if (after_fork) {
    config.path = std::string(file) + "." + std::to_string(pid) + ".strata";  // the owner lost its directory
    config.open_mode = SessionConfig::OpenMode::kCreateNew;
  } else {
    config.path = file;
    become_output_owner(file);
  }
  config.level = static_cast<int>(Level::kModel);
  if (const char* l = secure_getenv(env::kLevel)) {
    auto level = parse_level(l);
    if (level) config.level = static_cast<int>(*level);
    else std::fprintf(stderr, "strata: STRATA_LEVEL=%s is not a level; recording at model level\n", l);
  }
  // STRATA_BUFFER_MB set: a hard budget. Unset: 64 MiB, growing under a burst up to
  // STRATA_BUFFER_MAX_MB (default: 1/16 of the machine's memory, at most 512 MiB) and shrinking back:
  // a span site at full speed outruns the writer (about 40 M spans/s against 10-20 M/s), and 64 MiB
  // holds only 50-100 ms of that.
  if (nonempty(secure_getenv(env::kBufferMb)) != nullptr) {
    config.buffer_bytes = env_size(env::kBufferMb, 64) << 20;
  } else {
    config.buffer_bytes = size_t{64} << 20;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t ceiling = size_t{512} << 20;
    if (pages > 0 && page > 0) ceiling = std::min(ceiling, static_cast<size_t>(pages) * static_cast<size_t>(page) / 16);
    config.buffer_max_bytes = std::max(config.buffer_bytes, env_size(env::kBufferMaxMb, ceiling >> 20) << 20);
  }
  config.flush_interval_ms = static_cast<int>(env_size(env::kFlushMs, 100));
  config.compression_level = static_cast<int>(env_size(env::kCompress, 0));
  if (const char* tp = secure_getenv("TRACEPARENT")) config.context = parse_traceparent(tp);
  config.argv = read_argv();
  return config;
}

namespace {

bool process_running(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';  // not a zombie
}

bool stream_ended(const std::string& path) {
  format::ChunkReader reader;
  if (!reader.open(path)) return false;
  format::Chunk chunk;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk)
    if (chunk.type == static_cast<uint16_t>(format::ChunkType::kEnd)) return true;
  return false;
}

}  // namespace

void merge_descendants_if_owner() {
  if (!g_owner || g_owner->pid != getpid()) return;
  const OutputOwner owner = *g_owner;
  clear_owner();
  // The directory is ours (mkdtemp, 0700); it is still read as `strata record` reads its own:
  // through a descriptor, only regular files of this user, links never followed.
  int dir_fd = open(owner.parts_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    std::fprintf(stderr, "strata: %s: cannot open the child processes' directory: %s; their spans are not in %s\n",
                 owner.parts_dir.c_str(), std::strerror(errno), owner.output.c_str());
    return;
  }
  format::PartFiles listed = format::list_part_files(dir_fd, owner.parts_dir);
  format::PartFiles finished;
  finished.skipped = listed.skipped;
  std::vector<std::string> running;
  for (const std::string& name : listed.names) {
    const std::string path = owner.parts_dir + "/" + name;
    pid_t writer = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    if (process_running(writer) && !stream_ended(path)) running.push_back(path);
    else finished.names.push_back(name);
  }
  if (!finished.names.empty() || !finished.skipped.empty()) {
    format::Properties record;
    record.set("merged_by", "libstrata (STRATA_OUTPUT)");
    record.set_int("process_files", static_cast<int64_t>(finished.names.size()) + 1);
    format::MergeResult merged = format::append_part_files(dir_fd, owner.parts_dir, finished, owner.output, record);
    if (!merged.ok) {
      std::fprintf(stderr, "strata: %s; the other processes' traces stay in %s\n", merged.error.c_str(),
                   owner.parts_dir.c_str());
      close(dir_fd);
      return;
    }
    for (const auto& name : finished.names) unlinkat(dir_fd, name.c_str(), 0);
  }
  close(dir_fd);
  if (running.empty() && finished.skipped.empty()) {
    rmdir(owner.parts_dir.c_str());
    return;
  }
  if (!running.empty())
    std::fprintf(stderr,
                 "strata: %zu process(es) started under %s were still running when it stopped recording; "
                 "their traces stay in %s (load them with `strata info %s`)\n",
                 running.size(), owner.output.c_str(), owner.parts_dir.c_str(), owner.parts_dir.c_str());
}

Session* start_pending_after_fork() {
  std::lock_guard<std::mutex> lock(g_control_mu);
  if (!g_pending_fork_start.exchange(false)) return g_session.load();
  if (auto config = config_from_env(true)) {
    if (g_fork_context) config->context = g_fork_context;
    start_session_locked(std::move(*config));
  }
  if (g_session.load() == nullptr) strata_level_gate.store(0);
  return g_session.load();
}

namespace {

void stop_at_exit() { stop_session(); }

void after_fork_in_child() {
  // Only the forking thread exists in the child. The parent's session (and its writer thread) does
  // not: abandon it without touching its locks. Recording resumes at the child's first event (a
  // child that only execs writes nothing), under the span the forking thread had open.
  Session* parent = g_session.load();
  g_fork_context.reset();
  if (parent != nullptr) {
    g_fork_context = parent->context();
    g_fork_context->parent_span_id = parent->span_open_at_fork();
  }
  g_session.store(nullptr);
  strata_tls_cursor = nullptr;
  new (&g_control_mu) std::mutex();
  g_owner = nullptr;  // the parent owns the output file, not its children (storage left as it is)
  reset_exit_state_after_fork();
  if (g_started_from_env && parent != nullptr) {
    g_pending_fork_start.store(true);  // the level gate stays open: the first span starts the session
  } else {
    g_pending_fork_start.store(false);
    strata_level_gate.store(0);
  }
}

__attribute__((constructor)) void start_from_env() {
  Session::set_thread_registered_hook(&on_thread_registered);
  auto config = config_from_env(false);
  if (config) {
    if (start_session(std::move(*config))) {
      g_started_from_env = true;
      atexit(stop_at_exit);
      install_fatal_signal_handlers();
    } else {
      give_up_ownership();
    }
  }
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
}

__attribute__((destructor)) void stop_at_unload() { stop_session(); }

}  // namespace
}  // namespace strata::collect::rt
