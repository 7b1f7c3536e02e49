#include "sample/perf_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace strata::sample {

namespace {

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu, int group, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

const char* errno_name(int e) {
  switch (e) {
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case ENOSYS:
      return "ENOSYS";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EINVAL:
      return "EINVAL";
    case ESRCH:
      return "ESRCH";
    case EMFILE:
      return "EMFILE";
    default:
      return "errno";
  }
}

struct EventSpec {
  const char* name;
  uint32_t type;
  uint64_t config;
  bool by_frequency;  // hardware events: the kernel adjusts the period to reach `hz`
  uint64_t period;    // fixed period (misses)
};

// Event 0 is always the task clock: a sample per 1/hz s of the thread's CPU time, so counts are CPU
// time. Hardware events follow where the machine has a PMU.
constexpr EventSpec kHardwareEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, true, 0},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, true, 0},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false, 10007},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false, 10007},
};

template <typename T>
bool take(const char*& p, const char* end, T* out) {
  if (end - p < static_cast<ptrdiff_t>(sizeof(T))) return false;
  std::memcpy(out, p, sizeof(T));
  p += sizeof(T);
  return true;
}

}  // namespace

std::vector<int> online_cpus() {
  std::vector<int> cpus;
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  std::getline(in, text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int a = 0, b = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b && c < 4096; ++c) cpus.push_back(c);
    } else if (std::sscanf(part.c_str(), "%d", &a) == 1) {
      cpus.push_back(a);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (cpus.empty()) {
    long n = sysconf(_SC_NPROCESSORS_CONF);
    for (int c = 0; c < n; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::vector<uint32_t> list_threads(int pid) {
  std::vector<uint32_t> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    unsigned long tid = std::strtoul(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<uint32_t>(tid));
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  return tids;
}

PerfSampler::~PerfSampler() { stop(); }

int PerfSampler::open_event(int event, uint32_t tid, int cpu) {
  perf_event_attr attr;
  std::memcpy(&attr, attrs_[event].data(), sizeof(attr));
  attr.exclude_kernel = user_only_ ? 1 : 0;
  return static_cast<int>(perf_event_open(&attr, static_cast<pid_t>(tid), cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

bool PerfSampler::start(const PerfConfig& config) {
  config_ = config;
  config_.hz = std::clamp(config_.hz, 1, 100000);
  config_.stack_bytes = std::min<uint32_t>(std::max<uint32_t>(config_.stack_bytes, 1024), 65528) & ~7u;
  skip_.insert(config_.skip_tids.begin(), config_.skip_tids.end());
  period_ns_ = 1'000'000'000ull / static_cast<uint64_t>(config_.hz);
  cpus_ = online_cpus();

  // Event 0: the task clock.
  auto make_attr = [&](uint32_t type, uint64_t cfg, bool by_frequency, uint64_t period, bool side_band) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = type;
    a.config = cfg;
    if (by_frequency) {
      a.freq = 1;
      a.sample_freq = static_cast<uint64_t>(config_.hz);
    } else {
      a.sample_period = period;
    }
    a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    if (config_.dwarf) {
      a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
      a.sample_regs_user = kPerfRegMask;
      a.sample_stack_user = config_.stack_bytes;
    } else {
      a.sample_type |= PERF_SAMPLE_CALLCHAIN;
      a.exclude_callchain_kernel = 1;
    }
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.exclude_hv = 1;
    a.inherit = 1;
    a.inherit_thread = 1;  // threads, not forked processes (they sample themselves)
    a.remove_on_exec = 1;
    a.sample_id_all = 1;
    if (side_band) {  // executable mappings and thread exits, once (on the task clock)
      a.mmap = 1;
      a.mmap2 = 1;
      a.build_id = 1;
    }
    if (config_.wakeup_each_sample) {
      a.wakeup_events = 1;
    } else {
      a.watermark = 1;
      a.wakeup_watermark = 0;  // set per ring size below
    }
    std::vector<uint64_t> raw((sizeof(a) + 7) / 8);
    std::memcpy(raw.data(), &a, sizeof(a));
    return raw;
  };
  attrs_.push_back(make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false, period_ns_, true));
  if (config_.sigtrap_tag != 0) {  // the sampled thread reads its own Python stack at each sample
    auto* a = reinterpret_cast<perf_event_attr*>(attrs_.back().data());
    a->sigtrap = 1;
    a->sig_data = config_.sigtrap_tag;
  }
  event_names_.push_back("task-clock");

  // Can we sample kernel time too? Root (or perf_event_paranoid <= 1) can; others get user space only.
  user_only_ = false;
  {
    int fd = open_event(0, static_cast<uint32_t>(config_.pid), cpus_.front());
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
      user_only_ = true;
      fd = open_event(0, static_cast<uint32_t>(config_.pid), cpus_.front());
    }
    if (fd < 0) {
      errno_ = errno;
      error_ = std::string("perf_event_open(task-clock") + (config_.sigtrap_tag != 0 ? " with sigtrap" : "") +
               ", pid " + std::to_string(config_.pid) + "): " + errno_name(errno_) + " (" +
               std::strerror(errno_) + ")";
      attrs_.clear();
      event_names_.clear();
      return false;
    }
    close(fd);
  }
  if (config_.hardware_events) {
    for (const EventSpec& e : kHardwareEvents) {
      attrs_.push_back(make_attr(e.type, e.config, e.by_frequency, e.period, false));
      int fd =
          open_event(static_cast<int>(attrs_.size()) - 1, static_cast<uint32_t>(config_.pid), cpus_.front());
      if (fd < 0) {
        if (pmu_note_.empty())
          pmu_note_ = std::string("no hardware PMU events (") + e.name + ": " + errno_name(errno) +
                      "): culprits by cycles/cache/branch misses are not available on this machine";
        attrs_.pop_back();
        continue;
      }
      close(fd);
      event_names_.push_back(e.name);
    }
  } else {
    pmu_note_ = "hardware events not requested";
  }

  std::vector<uint32_t> tids;
  for (uint32_t tid : list_threads(config_.pid))
    if (!skip_.count(tid)) tids.push_back(tid);
  if (tids.empty()) {
    errno_ = ESRCH;
    error_ = "process " + std::to_string(config_.pid) + " has no thread to sample";
    return false;
  }
  if (!open_all(tids, cpus_)) return false;
  // Threads started between the listing and the events: those begun by a thread whose event was
  // already on are inherited; the others get their own events (duplicates are told apart by the
  // root event's id and dropped).
  std::vector<uint32_t> late;
  for (uint32_t tid : list_threads(config_.pid))
    if (!skip_.count(tid) && !roots_.count(tid)) late.push_back(tid);
  if (!late.empty()) open_all(late, cpus_);
  return true;
}

bool PerfSampler::open_all(const std::vector<uint32_t>& tids, const std::vector<int>& cpus) {
  const long page = sysconf(_SC_PAGESIZE);
  size_t pages = config_.ring_pages;
  if (pages == 0) pages = config_.dwarf ? 256 : 32;
  while (pages & (pages - 1)) pages &= pages - 1;  // power of two
  for (uint32_t tid : tids) {
    bool opened_any = false;
    for (size_t e = 0; e < attrs_.size(); ++e) {
      for (int cpu : cpus) {
        perf_event_attr* attr = reinterpret_cast<perf_event_attr*>(attrs_[e].data());
        if (!config_.wakeup_each_sample) attr->wakeup_watermark = static_cast<uint32_t>(pages * page / 4);
        int fd = open_event(static_cast<int>(e), tid, cpu);
        if (fd < 0) {
          if (errno == ESRCH) break;  // the thread exited meanwhile
          if (rings_.empty()) {
            errno_ = errno;
            error_ = std::string("perf_event_open(") + event_names_[e] + ", tid " + std::to_string(tid) +
                     ", cpu " + std::to_string(cpu) + "): " + errno_name(errno_) + " (" +
                     std::strerror(errno_) + ")";
            return false;
          }
          continue;
        }
        opened_any = true;
        event_fds_.push_back(fd);
        uint64_t id = 0;
        if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) event_of_id_[id] = {static_cast<uint32_t>(e), tid};
        auto ring = ring_of_cpu_.find(cpu);
        if (ring == ring_of_cpu_.end()) {
          Ring r;
          r.fd = fd;
          r.data_bytes = pages * static_cast<size_t>(page);
          r.map_bytes = r.data_bytes + static_cast<size_t>(page);
          r.base = mmap(nullptr, r.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          if (r.base == MAP_FAILED) {
            errno_ = errno;
            error_ = std::string("cannot map the perf ring of cpu ") + std::to_string(cpu) + ": " +
                     std::strerror(errno_) + " (perf_event_mlock_kb too small?)";
            return false;
          }
          ring_of_cpu_[cpu] = rings_.size();
          rings_.push_back(r);
          poll_fds_.push_back({fd, POLLIN, 0});
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rings_[ring->second].fd) != 0) {
          errno_ = errno;
          error_ = std::string("PERF_EVENT_IOC_SET_OUTPUT: ") + std::strerror(errno_);
          return false;
        }
      }
    }
    if (opened_any) roots_.insert(tid);
  }
  return true;
}

size_t PerfSampler::read(PerfSink& sink) {
  // Two passes over what every ring holds now: the executable mappings first, then the rest. A
  // thread's mmap and its next samples can land in the rings of different CPUs (it migrated), and a
  // sample read before its mapping's record would be a miss (the mapping table re-read
  // /proc/PID/maps for those, ~2 ms a read on PyTorch). Heads are read once, before both passes.
  heads_.resize(rings_.size());
  for (size_t i = 0; i < rings_.size(); ++i)
    heads_[i] =
        __atomic_load_n(&static_cast<perf_event_mmap_page*>(rings_[i].base)->data_head, __ATOMIC_ACQUIRE);
  for (size_t i = 0; i < rings_.size(); ++i) walk(rings_[i], heads_[i], true, sink);
  size_t records = 0;
  for (size_t i = 0; i < rings_.size(); ++i) {
    records += walk(rings_[i], heads_[i], false, sink);
    __atomic_store_n(&static_cast<perf_event_mmap_page*>(rings_[i].base)->data_tail, heads_[i],
                     __ATOMIC_RELEASE);
  }
  return records;
}

size_t PerfSampler::walk(const Ring& r, uint64_t head, bool mappings, PerfSink& sink) {
  const char* data = static_cast<const char*>(r.base) + (r.map_bytes - r.data_bytes);
  uint64_t tail = static_cast<perf_event_mmap_page*>(r.base)->data_tail;
  size_t records = 0;
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    const size_t at = tail % r.data_bytes;
    if (r.data_bytes - at >= sizeof(h)) {
      std::memcpy(&h, data + at, sizeof(h));
    } else {
      char tmp[sizeof(h)];
      const size_t first = r.data_bytes - at;
      std::memcpy(tmp, data + at, first);
      std::memcpy(tmp + first, data, sizeof(h) - first);
      std::memcpy(&h, tmp, sizeof(h));
    }
    if (h.size < sizeof(h) || h.size > head - tail) {
      if (!mappings) ++lost_[kLossBadRecord];
      break;  // cannot resynchronize inside a ring: what is there is skipped (the tail goes to the head)
    }
    if ((h.type == PERF_RECORD_MMAP2) == mappings) {
      const char* record = data + at;
      if (r.data_bytes - at < h.size) {  // wraps around the end: copy it out whole
        scratch_.resize(h.size);
        const size_t first = r.data_bytes - at;
        std::memcpy(scratch_.data(), data + at, first);
        std::memcpy(scratch_.data() + first, data, h.size - first);
        record = scratch_.data();
      }
      handle(record, h.size, sink);
    }
    tail += h.size;
    ++records;
  }
  return records;
}

void PerfSampler::handle(const char* record, size_t size, PerfSink& sink) {
  perf_event_header h;
  std::memcpy(&h, record, sizeof(h));
  const char* p = record + sizeof(h);
  const char* end = record + size;
  switch (h.type) {
    case PERF_RECORD_SAMPLE:
      handle_sample(p, end, sink);
      return;
    case PERF_RECORD_LOST: {
      uint64_t id = 0, lost = 0;
      if (take(p, end, &id) && take(p, end, &lost)) lost_[kLossRingOverflow] += lost;
      return;
    }
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE: {
      uint64_t time = 0, id = 0;
      if (!take(p, end, &time) || !take(p, end, &id)) return;
      if (h.type == PERF_RECORD_THROTTLE) {
        throttled_since_[id] = static_cast<int64_t>(time);
      } else if (auto it = throttled_since_.find(id); it != throttled_since_.end()) {
        // Estimated: the samples the period would have given over the throttled interval.
        const int64_t span = static_cast<int64_t>(time) - it->second;
        if (span > 0 && period_ns_ > 0) lost_[kLossThrottled] += static_cast<uint64_t>(span) / period_ns_;
        throttled_since_.erase(it);
      }
      return;
    }
    case PERF_RECORD_MMAP2: {
      uint32_t pid = 0, tid = 0;
      uint64_t addr = 0, len = 0, pgoff = 0;
      if (!take(p, end, &pid) || !take(p, end, &tid) || !take(p, end, &addr) || !take(p, end, &len) ||
          !take(p, end, &pgoff) || end - p < 24 + 8)
        return;
      std::string_view build_id;
      if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
        const uint8_t id_size = static_cast<uint8_t>(p[0]);
        if (id_size <= 20) build_id = std::string_view(p + 4, id_size);
      }
      p += 24;  // maj/min/ino/generation or the build id
      uint32_t prot = 0, flags = 0;
      take(p, end, &prot);
      take(p, end, &flags);
      const char* name_end = static_cast<const char*>(std::memchr(p, '\0', static_cast<size_t>(end - p)));
      if (name_end == nullptr) return;
      // The trailer's time (sample_id_all): the last u64 before the identifier.
      int64_t time = 0;
      if (end - record >= 16) std::memcpy(&time, end - 16, 8);
      if (static_cast<int>(pid) == config_.pid && (prot & 0x4 /*PROT_EXEC*/))
        sink.on_mmap(pid, addr, len, pgoff, std::string_view(p, static_cast<size_t>(name_end - p)), build_id,
                     time);
      return;
    }
    default:
      return;  // COMM, EXIT, FORK, ...: not needed
  }
}

void PerfSampler::handle_sample(const char* p, const char* end, PerfSink& sink) {
  RawSample s;
  uint64_t id = 0, ip = 0, time = 0;
  if (!take(p, end, &id) || !take(p, end, &ip) || !take(p, end, &s.pid) || !take(p, end, &s.tid) ||
      !take(p, end, &time)) {
    ++lost_[kLossBadRecord];
    return;
  }
  s.time_ns = static_cast<int64_t>(time);
  auto ev = event_of_id_.find(id);
  if (ev != event_of_id_.end()) {
    s.event = ev->second.first;
    // A thread with events of its own also shows up through its creator's inherited event when it
    // started between our two listings: keep only its own.
    if (ev->second.second != s.tid && roots_.count(s.tid)) return;
  }
  if (skip_.count(s.tid)) return;
  uint64_t chain[kMaxNativeFrames + 1];
  uint32_t n = 0;
  const bool in_kernel = ip >= 0xffff800000000000ull;
  if (!config_.dwarf) {
    uint64_t nr = 0;
    if (!take(p, end, &nr) || nr > static_cast<uint64_t>(end - p) / 8) {
      ++lost_[kLossBadRecord];
      return;
    }
    for (uint64_t k = 0; k < nr; ++k) {
      uint64_t v = 0;
      take(p, end, &v);
      if (v >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // PERF_CONTEXT_USER and friends
      if (n < kMaxNativeFrames) chain[n++] = v;
    }
  } else {
    uint64_t abi = 0;
    if (!take(p, end, &abi)) {
      ++lost_[kLossBadRecord];
      return;
    }
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
      for (int r = 0; r < kPerfRegCount; ++r) {
        if (!(kPerfRegMask & (uint64_t{1} << r))) continue;
        if (!take(p, end, &s.regs[r])) {
          ++lost_[kLossBadRecord];
          return;
        }
      }
      s.has_regs = true;
    }
    uint64_t size = 0;
    if (!take(p, end, &size) || size > static_cast<uint64_t>(end - p)) {
      ++lost_[kLossBadRecord];
      return;
    }
    const char* bytes = p;
    p += size;
    uint64_t dyn_size = 0;
    if (size > 0 && take(p, end, &dyn_size)) {
      s.stack = reinterpret_cast<const uint8_t*>(bytes);
      s.stack_size = static_cast<uint32_t>(std::min(dyn_size, size));
    }
  }
  // A sample taken in the kernel: the kernel frame first (kernel time is CPU time of this stack).
  if (in_kernel && !config_.dwarf) {
    if (n == 0 || chain[0] != ip) {
      std::memmove(chain + 1, chain, std::min<uint32_t>(n, kMaxNativeFrames - 1) * 8);
      chain[0] = ip;
      n = std::min<uint32_t>(n + 1, kMaxNativeFrames);
    }
  } else if (!config_.dwarf && n == 0) {
    chain[n++] = ip;
  }
  s.ips = chain;
  s.ip_count = n;
  if (in_kernel && config_.dwarf) {
    // Registers are the user state at kernel entry; say where the time went with a kernel leaf.
    chain[0] = ip;
    s.ips = chain;
    s.ip_count = 1;
  }
  sink.on_sample(s);
}

bool PerfSampler::target_gone() {
  if (rings_.empty()) return true;
  std::vector<pollfd> fds = poll_fds_;
  if (::poll(fds.data(), fds.size(), 0) < 0) return false;
  for (const pollfd& f : fds)
    if (!(f.revents & POLLHUP)) return false;
  return true;
}

void PerfSampler::stop() {
  for (int fd : event_fds_) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  for (Ring& r : rings_)
    if (r.base != nullptr && r.base != MAP_FAILED) munmap(r.base, r.map_bytes);
  for (int fd : event_fds_) close(fd);
  rings_.clear();
  event_fds_.clear();
  poll_fds_.clear();
  ring_of_cpu_.clear();
}

void PerfSampler::abandon() {
  for (Ring& r : rings_)
    if (r.base != nullptr && r.base != MAP_FAILED) munmap(r.base, r.map_bytes);
  for (int fd : event_fds_) close(fd);
  rings_.clear();
  event_fds_.clear();
  poll_fds_.clear();
  ring_of_cpu_.clear();
}

std::string PerfSampler::mode() const {
  std::string m = "perf_event task-clock " + std::to_string(config_.hz) + " Hz, ";
  m += config_.dwarf
           ? "DWARF unwinding (" + std::to_string(config_.stack_bytes) + " bytes of stack per sample)"
           : "frame-pointer callchains";
  m += user_only_ ? ", user space only (perf_event_paranoid allows no kernel sampling: time in the kernel is "
                    "not seen)"
                  : ", user and kernel time";
  if (event_names_.size() > 1) {
    m += ", events:";
    for (const auto& e : event_names_) m += " " + e;
  }
  return m;
}

}  // namespace strata::sample
