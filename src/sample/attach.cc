#include "sample/attach.h"

#include <dirent.h>
#include <signal.h>
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

struct EpochFile {
  std::string path;
  uint64_t bytes = 0;
};

class Attacher {
 public:
  Attacher(const AttachOptions& options, AttachResult* result) : options_(options), result_(result) {}

  bool start(std::string* error) {
    if (!process_alive(options_.pid)) {
      *error = "process " + std::to_string(options_.pid) + " does not exist (or has exited)";
      return false;
    }
    if (mkdir(options_.dir.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = options_.dir + ": cannot create the directory: " + std::strerror(errno);
      return false;
    }
    struct stat st {};
    if (lstat(options_.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *error = options_.dir + ": not a directory (links are not followed)";
      return false;
    }
    if (access(options_.dir.c_str(), W_OK) != 0) {
      *error = options_.dir + ": not writable";
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
    // Epoch files of an earlier attach to the same process stay; numbering goes on after them.
    for (const EpochFile& f : list_epochs()) {
      const size_t at = f.path.rfind("-epoch-");
      const uint32_t n = static_cast<uint32_t>(std::strtoul(f.path.c_str() + at + 7, nullptr, 10));
      next_epoch_ = std::max(next_epoch_, n + 1);
    }
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

  std::vector<EpochFile> list_epochs() const {
    std::vector<EpochFile> out;
    const std::string prefix = std::to_string(options_.pid) + "-epoch-";
    DIR* d = opendir(options_.dir.c_str());
    if (d == nullptr) return out;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0 || name.size() < 7 || name.compare(name.size() - 7, 7, ".strata") != 0)
        continue;
      struct stat st {};
      std::string path = options_.dir + "/" + name;
      if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        out.push_back({path, static_cast<uint64_t>(st.st_size)});
    }
    closedir(d);
    std::sort(out.begin(), out.end(), [](const EpochFile& a, const EpochFile& b) { return a.path < b.path; });
    return out;
  }

  // One self-contained trace: the process, the definitions its samples use, counts, losses, End.
  void write_epoch(int64_t end_ns) {
    char name[64];
    std::snprintf(name, sizeof(name), "%d-epoch-%06u.strata", options_.pid, next_epoch_);
    const std::string path = options_.dir + "/" + name;
    const std::string temp = path + ".tmp";
    format::ChunkWriter file;
    unlink(temp.c_str());
    if (!file.open_new(temp)) {
      last_error_ = file.error();
      return;
    }
    std::mt19937_64 random(std::random_device{}() ^ static_cast<uint64_t>(end_ns));
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
    if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
      last_error_ = path + ": " + (ok ? std::strerror(errno) : stream.error());
      unlink(temp.c_str());
      return;
    }
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

  // Oldest epochs go first until the directory's epochs fit; the newest always stays.
  void enforce_budget() {
    std::vector<EpochFile> files = list_epochs();
    uint64_t total = 0;
    for (const EpochFile& f : files) total += f.bytes;
    size_t k = 0;
    while (options_.max_disk_bytes > 0 && total > options_.max_disk_bytes && k + 1 < files.size()) {
      if (unlink(files[k].path.c_str()) == 0) {
        total -= files[k].bytes;
        ++result_->epochs_removed;
        result_->bytes_removed += files[k].bytes;
      }
      ++k;
    }
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
