#include "trace/trace_reader.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>

#include "core/env_vars.h"
#include "format/input_file.h"
#include "trace/trace_append.h"
#include "trace/trace_loader.h"

namespace strata::trace {
namespace {

std::vector<std::unique_ptr<TraceReader>>& registry() {
  static std::vector<std::unique_ptr<TraceReader>> readers = [] {
    std::vector<std::unique_ptr<TraceReader>> v;
    v.push_back(make_native_reader());
    return v;
  }();
  return readers;
}

std::string reader_list() {
  std::string out;
  for (const auto& r : registry()) {
    out += out.empty() ? "" : "; ";
    out += std::string(r->name()) + ": " + std::string(r->description());
  }
  return out;
}

std::string format_list() {
  std::string out = "auto";
  for (const auto& r : registry())
    for (std::string_view f : r->formats()) out += ", " + std::string(f);
  return out;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1u << 30));
  return buf;
}

// What the first bytes of an input no reader recognizes look like, to say what it is.
std::string describe_head(std::string_view head) {
  if (head.substr(0, 16) == std::string_view("SQLite format 3\0", 16))
    return "an SQLite database (an Nsight Systems export?), which no reader in this build reads";
  if (head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x28 &&
      static_cast<unsigned char>(head[1]) == 0xb5 && static_cast<unsigned char>(head[2]) == 0x2f &&
      static_cast<unsigned char>(head[3]) == 0xfd)
    return "zstd-compressed data; decompress it first (zstd -d)";
  if (head.substr(0, 4) == "PK\x03\x04") return "a zip archive; unzip it first";
  char buf[64];
  std::string bytes;
  for (size_t i = 0; i < head.size() && i < 8; ++i) {
    std::snprintf(buf, sizeof(buf), "%s%02x", i ? " " : "", static_cast<unsigned char>(head[i]));
    bytes += buf;
  }
  return "starts with bytes " + bytes + ", the start of no format a reader recognizes";
}

bool probe_path(const std::string& path, ProbeInput* in, std::string* head, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + (errno == ENOENT ? ": no such file or directory"
                                     : ": cannot open (" + std::string(std::strerror(errno)) + ")");
    return false;
  }
  in->path = path;
  if (S_ISDIR(st.st_mode)) {
    in->is_directory = true;
    return true;
  }
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode)                         ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                    : "not a regular file";
    *error = path + ": " + what + ", not a trace file; save the trace to a regular file first and open that";
    return false;
  }
  in->size = static_cast<uint64_t>(st.st_size);
  if (in->size == 0) {
    *error =
        path +
        ": offset 0: empty file (0 bytes): nothing was written to it (was its writer killed at start, or is "
        "this the wrong file?)";
    return false;
  }
  // Opened without blocking and checked again once open (the path may have been swapped for a FIFO
  // since the stat above).
  uint64_t size = 0;
  const int fd = format::open_regular_file(path, &size, error);
  if (fd < 0) return false;
  head->resize(std::min<uint64_t>(size, 4096));
  const ssize_t n = ::read(fd, head->data(), head->size());
  ::close(fd);
  head->resize(n > 0 ? static_cast<size_t>(n) : 0);
  in->head = *head;
  return true;
}

const TraceReader* choose_reader(const ProbeInput& in, const std::string& format, std::string* error) {
  if (format != "auto") {
    const TraceReader* r = find_reader(format);
    if (r == nullptr) *error = "unknown format '" + format + "'; use one of: " + format_list();
    return r;
  }
  const TraceReader* best = nullptr;
  int best_score = 0;
  for (const auto& r : registry()) {
    int score = r->probe(in);
    if (score > best_score) {
      best = r.get();
      best_score = score;
    }
  }
  if (best == nullptr)
    *error = in.path + ": not a trace: " + describe_head(in.head) + ". Readers: " + reader_list();
  return best;
}

bool memory_check_enabled() {
  const char* v = std::getenv(env::kMemoryCheck);
  return v == nullptr || std::string_view(v) != "0";
}

uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return UINT64_MAX;
  return std::strtoull(text.c_str(), nullptr, 10);
}

}  // namespace

void register_reader(std::unique_ptr<TraceReader> reader) {
  for (const auto& r : registry())
    if (r->name() == reader->name()) return;
  registry().push_back(std::move(reader));
}

std::vector<const TraceReader*> registered_readers() {
  std::vector<const TraceReader*> out;
  for (const auto& r : registry()) out.push_back(r.get());
  return out;
}

const TraceReader* find_reader(std::string_view format) {
  for (const auto& r : registry()) {
    if (r->name() == format) return r.get();
    for (std::string_view f : r->formats())
      if (f == format) return r.get();
  }
  return nullptr;
}

bool parallel_read_fits(uint64_t estimate, uint64_t available) {
  // Measured peaks, four ranks (docs/ranks.md): native files the same either way; Kineto JSON
  // 1.34 times the estimate read in parallel (every thread holds its text and every part its
  // spans until appended) against 0.59 times one by one. Half again the estimate covers that.
  return estimate <= available && estimate / 2 <= available - estimate;
}

uint64_t available_memory_bytes() {
  uint64_t available = UINT64_MAX;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t kb = 0;
    std::string unit;
    while (meminfo >> key >> kb >> unit)
      if (key == "MemAvailable:") available = std::min(available, kb * 1024);
  }
  {
    // cgroup v2: this process's group, limit minus usage.
    std::ifstream self("/proc/self/cgroup");
    std::string line;
    while (std::getline(self, line)) {
      if (line.rfind("0::", 0) != 0) continue;
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      const uint64_t limit = read_number(dir + "/memory.max");
      const uint64_t used = read_number(dir + "/memory.current");
      if (limit != UINT64_MAX && used != UINT64_MAX)
        available = std::min(available, limit > used ? limit - used : 0);
    }
  }
  struct rlimit rl {};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const uint64_t used = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    available = std::min<uint64_t>(available, rl.rlim_cur > used ? rl.rlim_cur - used : 0);
  }
  return available;
}

const TraceReader* reader_for(const std::string& path, const std::string& format, std::string* error) {
  ProbeInput in;
  std::string head;
  if (!probe_path(path, &in, &head, error)) return nullptr;
  in.head = head;
  return choose_reader(in, format, error);
}

namespace {

struct Input {
  ProbeInput probe;
  std::string head;
  const TraceReader* reader = nullptr;
};

unsigned read_jobs(unsigned asked, size_t inputs) {
  unsigned jobs = asked;
  if (jobs == 0) {
    const char* env = std::getenv(strata::env::kJobs);
    jobs = env != nullptr && *env != '\0' ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 0;
    if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  }
  return static_cast<unsigned>(std::min<size_t>(jobs, inputs));
}

enum class ParallelRead { kDone, kFailed, kSerial };

// Reads the inputs on `jobs` threads, each into a trace of its own, then appends them to the
// builder's trace in input order (trace_append.h: the serial read's trace). kSerial when the parts
// cannot be appended exactly (CPU samples, more processes than a trace holds): nothing was
// appended and the caller reads serially. kFailed with *error set: the first input in order that
// failed, with its reader's line (as the serial read stops there). Every part is held until all
// are read, so the peak memory is up to twice the trace's.
ParallelRead read_in_parallel(std::vector<Input>& inputs, const std::string& format, unsigned jobs,
                              TraceBuilder* builder, std::vector<size_t>* first_process, std::string* error) {
  struct Part {
    Trace trace;
    TraceBuilder builder{&trace};
    std::string error;
    std::exception_ptr exception;
    bool ok = false, done = false;
  };
  std::vector<Part> parts(inputs.size());
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (size_t k; !stop && (k = next++) < inputs.size();) {
      Part& p = parts[k];
      try {
        p.ok = inputs[k].reader->read(inputs[k].probe, format, p.builder, &p.error);
      } catch (...) {
        p.exception = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      p.done = true;
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < jobs; ++j) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads now (a thread or address-space limit): the ones running share the inputs
    }
  }
  if (threads.empty()) work();  // not even one: this thread reads them all, still into parts
  auto wait_for = [&](size_t k) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return parts[k].done; });
  };
  // Every part is checked before any is appended: a fallback to the serial read must find the
  // output untouched. Parts are kept until then (the parallel read holds them all at once).
  bool exact = true;
  size_t processes = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    wait_for(k);
    Part& p = parts[k];
    if (p.exception || !p.ok) {
      stop = true;
      for (std::thread& t : threads) t.join();
      if (p.exception) std::rethrow_exception(p.exception);
      *error = p.error;
      return ParallelRead::kFailed;
    }
    processes += p.trace.processes.size();
    exact = exact && can_append(p.trace) && processes <= UINT16_MAX;
  }
  for (std::thread& t : threads) t.join();
  if (!exact) return ParallelRead::kSerial;
  Trace& out = builder->trace();
  size_t spans = 0, attrs = 0;
  for (const Part& p : parts) spans += p.trace.spans.size(), attrs += p.trace.attrs.size();
  out.reserve(spans, attrs);
  for (size_t k = 0; k < parts.size(); ++k) {
    first_process->push_back(out.processes.size());
    append_trace(std::move(parts[k].trace), parts[k].builder, inputs[k].reader->name() != "native", &out,
                 builder);
  }
  return ParallelRead::kDone;
}

}  // namespace

bool open_traces(std::span<const std::string> paths, Trace* out, std::string* error,
                 const OpenOptions& options) {
  std::vector<Input> inputs(paths.size());
  uint64_t estimate = 0;
  for (size_t k = 0; k < paths.size(); ++k) {
    Input& in = inputs[k];
    if (!probe_path(paths[k], &in.probe, &in.head, error)) return false;
    in.probe.head = in.head;
    in.reader = choose_reader(in.probe, options.format, error);
    if (in.reader == nullptr) return false;
    estimate += in.reader->memory_estimate(in.probe);
  }
  unsigned jobs = read_jobs(options.jobs, inputs.size());
  if (options.check_memory && memory_check_enabled()) {
    const uint64_t available = available_memory_bytes();
    if (estimate > available) {
      *error = (paths.size() == 1 ? paths[0] : std::to_string(paths.size()) + " inputs") + ": needs about " +
               gib(estimate) + " of memory once loaded, but only " + gib(available) +
               " is available (MemAvailable, cgroup and address-space limits); free memory or use a larger "
               "machine, or set STRATA_MEMORY_CHECK=0 to try anyway";
      return false;
    }
    if (jobs > 1 && !parallel_read_fits(estimate, available)) jobs = 1;
  }
  TraceBuilder builder(out);
  std::vector<size_t> first_process;
  // Parallel into an empty trace only (appending to one that holds spans is a merge the parts'
  // string ids and process indices would have to start from).
  ParallelRead parallel = ParallelRead::kSerial;
  if (jobs > 1 && out->processes.empty() && out->spans.empty())
    parallel = read_in_parallel(inputs, options.format, jobs, &builder, &first_process, error);
  if (parallel == ParallelRead::kFailed) return false;
  if (parallel == ParallelRead::kSerial) {
    for (Input& in : inputs) {
      first_process.push_back(out->processes.size());
      if (!in.reader->read(in.probe, options.format, builder, error)) return false;
    }
  }
  if (options.before_finish) options.before_finish(*out, first_process);
  builder.finish({.structure = options.structure, .tree = options.tree});
  return true;
}

bool open_trace(const std::string& path, Trace* out, std::string* error, const OpenOptions& options) {
  return open_traces(std::span<const std::string>(&path, 1), out, error, options);
}

}  // namespace strata::trace
