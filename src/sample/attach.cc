#include "sample/attach.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "format/chunk_writer.h"
#include "format/payloads.h"
#include "format/stream_writer.h"
#include "sample/collector.h"
#include "sample/sample_store.h"

namespace strata::sample {
namespace {

int64_t realtime_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Alive and not a zombie.
bool process_alive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ||
         (stat[close + 2] != 'Z' && stat[close + 2] != 'X');
}

// An epoch file this attach wrote (only these are counted against the budget and removed).
struct EpochFile {
  std::string name;
  uint64_t bytes = 0;
  dev_t dev = 0;
  ino_t ino = 0;
};

class Attacher {
 public:
  Attacher(const AttachOptions& options, AttachResult* result) : options_(options), result_(result) {}

  bool start(std::string* error) {
    if (!process_alive(options_.pid)) {
      *error = "process " + std::to_string(options_.pid) + " does not exist (or has exited)";
      return false;
    }
    if (options_.dir_fd < 0) {
      *error = options_.dir + ": the output directory is not open";
      return false;
    }
    exe_ = read_link("/proc/" + std::to_string(options_.pid) + "/exe");
    argv_ = read_file("/proc/" + std::to_string(options_.pid) + "/cmdline");
    if (!argv_.empty() && argv_.back() == '\0') argv_.pop_back();
    CollectorConfig config;
    config.pid = options_.pid;
    config.in_process = false;
    config.hz = options_.hz;
    config.dwarf = options_.dwarf;
    config.stack_bytes = options_.stack_bytes;
    config.python = options_.python;
    if (!collector_.start(config, error)) return false;
    result_->mode = collector_.mode();
    result_->python_note = collector_.python_note();
    // Epoch files of an earlier attach of this user to the same process stay; numbering goes on
    // after them. Anything else named like one (another user's file, a link) is left alone.
    scan_earlier_epochs();
    epoch_start_ns_ = monotonic_now_ns();
    epoch_start_real_ns_ = realtime_now_ns();
    return true;
  }

  // Returns the reason the attach ended.
  std::string run(std::atomic<bool>* stop) {
    const int64_t started = monotonic_now_ns();
    for (;;) {
      collector_.poll(100);
      take();
      const int64_t now = monotonic_now_ns();
      std::string reason;
      if (stop != nullptr && stop->load())
        reason = "stopped by signal";
      else if (options_.duration_ns > 0 && now - started >= options_.duration_ns)
        reason = "duration reached";
      else if (collector_.target_gone() || !process_alive(options_.pid))
        reason = "target exited";
      if (!reason.empty()) {
        collector_.stop();
        collector_.poll(0);
        take();
        write_epoch(monotonic_now_ns());
        return reason;
      }
      if (now - epoch_start_ns_ >= options_.epoch_ns) write_epoch(now);
    }
  }

 private:
  static std::string read_link(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

  void take() {
    SampleBatch batch;
    collector_.take(&batch);
    for (auto& m : batch.mappings) mappings_.push_back(std::move(m));
    for (auto& f : batch.frames) frames_[f.frame.id] = std::move(f);
    for (auto& s : batch.stacks) stacks_[s.id] = std::move(s.frames);
    for (auto& t : batch.thread_names) thread_names_.push_back(std::move(t));
    samples_.insert(samples_.end(), batch.samples.begin(), batch.samples.end());
  }

  // "<pid>-epoch-NNNNNN.strata" -> NNNNNN; -1 for any other name.
  int64_t epoch_number(const std::string& name) const {
    const std::string prefix = std::to_string(options_.pid) + "-epoch-";
    if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 6 + 7 ||
        name.compare(name.size() - 7, 7, ".strata") != 0)
      return -1;
    int64_t n = 0;
    for (size_t k = prefix.size(); k < prefix.size() + 6; ++k) {
      if (name[k] < '0' || name[k] > '9') return -1;
      n = n * 10 + (name[k] - '0');
    }
    return n;
  }

  void scan_earlier_epochs() {
    const int copy = dup(options_.dir_fd);
    DIR* d = copy >= 0 ? fdopendir(copy) : nullptr;
    if (d == nullptr) {
      if (copy >= 0) close(copy);
      return;
    }
    rewinddir(d);  // the duplicate shares the descriptor's position: list from the start
    while (dirent* e = readdir(d)) {
      const int64_t n = epoch_number(e->d_name);
      struct stat st {};
      if (n < 0 || fstatat(options_.dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        ++result_->foreign_entries;
        continue;
      }
      next_epoch_ = std::max(next_epoch_, static_cast<uint32_t>(n) + 1);
    }
    closedir(d);
  }

  std::string epoch_name(uint32_t epoch) const {
    char name[64];
    std::snprintf(name, sizeof(name), "%d-epoch-%06u.strata", options_.pid, epoch);
    return name;
  }

  // Moves the finished temporary file to the first free epoch name from next_epoch_ on, never
  // replacing an entry (renameat2 RENAME_NOREPLACE, or link where the file system lacks it).
  bool publish(const std::string& temp, std::string* name) {
    for (int attempt = 0; attempt < 1000; ++attempt, ++next_epoch_) {
      *name = epoch_name(next_epoch_);
      if (renameat2(options_.dir_fd, temp.c_str(), options_.dir_fd, name->c_str(), RENAME_NOREPLACE) == 0)
        return true;
      if (errno == EINVAL || errno == ENOSYS) {
        if (linkat(options_.dir_fd, temp.c_str(), options_.dir_fd, name->c_str(), 0) == 0) {
          unlinkat(options_.dir_fd, temp.c_str(), 0);
          return true;
        }
      }
      if (errno != EEXIST) break;
    }
    last_error_ = options_.dir + "/" + *name + ": cannot create: " + std::strerror(errno);
    return false;
  }

  // One self-contained trace: the process, the definitions its samples use, counts, losses, End.
  void write_epoch(int64_t end_ns) {
    // The number this file is written for: past any entry of that name (the rename re-checks).
    struct stat taken {};
    while (next_epoch_ < 999999 &&
           fstatat(options_.dir_fd, epoch_name(next_epoch_).c_str(), &taken, AT_SYMLINK_NOFOLLOW) == 0)
      ++next_epoch_;
    std::mt19937_64 random(std::random_device{}() ^ static_cast<uint64_t>(end_ns));
    char suffix[24];
    std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(random()));
    const std::string temp = "." + epoch_name(next_epoch_) + ".tmp-" + suffix;
    format::ChunkWriter file;
    if (!file.open_new_at(options_.dir_fd, temp, options_.dir + "/" + temp)) {
      last_error_ = file.error();
      return;
    }
    format::StreamWriter stream(&file, random() | 1);
    format::Properties process;
    process.set_int("pid", options_.pid);
    process.set_int("ppid", 0);
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    process.set("host", host);
    process.set("exe", exe_);
    process.set("argv", argv_);
    char trace_id[33];
    std::snprintf(trace_id, sizeof(trace_id), "%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    process.set("trace_id", trace_id);
    process.set_int("start_realtime_ns", epoch_start_real_ns_);
    process.set_int("start_monotonic_ns", epoch_start_ns_);
    process.set("writer", "strata attach 1");
    process.set_int("attach.epoch", next_epoch_);
    stream.write_properties(format::ChunkType::kProcess, process);

    // The definitions this epoch's samples use (every earlier file may be gone).
    SampleBatch batch;
    std::set<uint32_t> stacks, frames;
    for (const SampleRecord& s : samples_) stacks.insert(s.stack);
    for (uint32_t id : stacks) {
      auto it = stacks_.find(id);
      if (it == stacks_.end()) continue;
      batch.stacks.push_back({id, it->second});
      frames.insert(it->second.begin(), it->second.end());
    }
    std::set<uint32_t> used_mappings;
    for (uint32_t id : frames) {
      auto it = frames_.find(id);
      if (it == frames_.end()) continue;
      batch.frames.push_back(it->second);
      if (it->second.frame.kind == format::SampleFrameKind::kNative)
        used_mappings.insert(it->second.frame.mapping);
    }
    for (const MappingDef& m : mappings_)
      if (used_mappings.count(m.mapping.id)) batch.mappings.push_back(m);
    batch.samples = std::move(samples_);
    samples_.clear();
    batch.thread_names = thread_names_;
    const size_t sample_records = batch.samples.size();
    StoreOptions store_options;
    store_options.epoch_ns = INT64_MAX;
    store_options.timeline = options_.timeline;
    store_options.attribute = false;
    SampleStore store(store_options);
    format::Properties config = collector_.config_properties();
    config.set_int("attach.epoch", next_epoch_);
    config.set_int("attach.epoch_ns", options_.epoch_ns);
    config.set_int("attach.epochs_removed", result_->epochs_removed);
    config.set_int("attach.bytes_removed", static_cast<int64_t>(result_->bytes_removed));
    store.set_config(config);
    store.add_batch(std::move(batch));
    store.aggregate(true);
    store.write(stream, end_ns, true);
    result_->samples += store.samples_counted();
    (void)sample_records;

    // Losses during this epoch (each file is its own stream: its counters start at zero).
    format::Properties stats;
    for (int c = 0; c < kLossCount; ++c) {
      const uint64_t total = collector_.lost(c);
      const uint64_t delta = total - reported_lost_[c];
      reported_lost_[c] = total;
      if (!loss_keeps_sample(c)) result_->lost += delta;
      if (delta > 0 || c == kLossRingOverflow)
        stats.set_int(std::string("dropped.sample_") + loss_name(c), static_cast<int64_t>(delta));
    }
    add_python_counters(&stats);
    stream.write_properties(format::ChunkType::kStats, stats);
    format::Properties end;
    end.set_int("end_monotonic_ns", end_ns);
    end.set_int("spans_written", 0);
    stream.write_properties(format::ChunkType::kEnd, end);
    const bool ok = !stream.failed();
    file.close();
    std::string name;
    if (!ok) last_error_ = options_.dir + "/" + temp + ": " + stream.error();
    if (!ok || !publish(temp, &name)) {
      unlinkat(options_.dir_fd, temp.c_str(), 0);
      return;
    }
    struct stat st {};
    if (fstatat(options_.dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      written_.push_back({name, static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino});
    ++result_->epochs_written;
    ++next_epoch_;
    epoch_start_ns_ = end_ns;
    epoch_start_real_ns_ = realtime_now_ns();
    enforce_budget();
  }

  // The samples taken and the Python read counters that apply from the outside (the same keys as the
  // in-process recorder's, in_process.cc; the handler's are in-thread only), for this epoch like the losses.
  void add_python_counters(format::Properties* stats) {
    const PythonReadCounters py = collector_.python_counters();
    std::vector<std::pair<const char*, uint64_t>> counts = {
        {"sample.samples_taken", collector_.samples()},
        {"sample.stacks_cut_unmapped", collector_.stacks_cut_unmapped()},
        {"sample.jit_frames_named", collector_.jit_frames_named()},
        {"sample.files_refused", SampleCollector::files_refused()}};
    if (py.available) {
      counts.insert(counts.end(), {{"sample.python_reads", py.reads},
                                   {"sample.python_frames_from_chunks", py.frames_from_chunks},
                                   {"sample.python_frames_read_singly", py.frames_read_singly},
                                   {"sample.python_speculative_hits", py.speculative_hits},
                                   {"sample.python_code_objects", py.code_objects},
                                   {"sample.python_strings_malformed", py.strings_malformed}});
    }
    for (const auto& [key, total] : counts) {
      uint64_t& reported = reported_python_[key];
      stats->set_int(std::string("collector.") + key, static_cast<int64_t>(total - reported));
      reported = total;
    }
  }

  // The oldest epochs this attach wrote go first until its epochs fit; the newest always stays.
  // Files of earlier attaches, and anything another user put in the directory, are neither
  // counted nor removed; a name that no longer holds the file written is left alone.
  void enforce_budget() {
    uint64_t total = 0;
    for (const EpochFile& f : written_) total += f.bytes;
    size_t k = 0;
    while (options_.max_disk_bytes > 0 && total > options_.max_disk_bytes && k + 1 < written_.size()) {
      const EpochFile& f = written_[k];
      struct stat st {};
      if (fstatat(options_.dir_fd, f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
          st.st_dev == f.dev && st.st_ino == f.ino && unlinkat(options_.dir_fd, f.name.c_str(), 0) == 0) {
        ++result_->epochs_removed;
        result_->bytes_removed += f.bytes;
      }
      total -= f.bytes;  // gone, or no longer this attach's file: not counted either way
      ++k;
    }
    written_.erase(written_.begin(), written_.begin() + static_cast<std::ptrdiff_t>(k));
    result_->bytes_kept = total;
  }

 public:
  std::string last_error_;

 private:
  AttachOptions options_;
  AttachResult* result_;
  SampleCollector collector_;
  std::string exe_, argv_;
  std::vector<MappingDef> mappings_;
  std::unordered_map<uint32_t, FrameDef> frames_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> stacks_;
  std::vector<std::pair<uint32_t, std::string>> thread_names_;
  std::vector<SampleRecord> samples_;
  std::vector<EpochFile> written_;  // this attach's epoch files still kept, oldest first
  uint32_t next_epoch_ = 0;
  int64_t epoch_start_ns_ = 0;
  int64_t epoch_start_real_ns_ = 0;
  uint64_t reported_lost_[kLossCount] = {};
  std::map<std::string, uint64_t> reported_python_;  // totals written in earlier epochs, by key
};

}  // namespace

bool run_attach(const AttachOptions& options, std::atomic<bool>* stop, AttachResult* result,
                std::string* error) {
  Attacher attacher(options, result);
  if (!attacher.start(error)) return false;
  result->end_reason = attacher.run(stop);
  if (!attacher.last_error_.empty()) {
    *error = attacher.last_error_;
    return result->epochs_written > 0;
  }
  return true;
}

}  // namespace strata::sample
