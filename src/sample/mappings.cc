#include "sample/mappings.h"

#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sample/remote_range.h"

namespace strata::sample {

int64_t monotonic_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

MappingTable::MappingTable(int pid, std::string root) : pid_(pid), root_(std::move(root)) {
  // Page zero at least (a process with CAP_SYS_RAWIO may map below mmap_min_addr, never code there).
  if (FILE* f = std::fopen("/proc/sys/vm/mmap_min_addr", "re")) {
    unsigned long long v = 0;
    if (std::fscanf(f, "%llu", &v) == 1) lowest_mappable_ = std::max<uint64_t>(lowest_mappable_, v);
    std::fclose(f);
  }
}

bool MappingTable::load_proc_maps(std::string* error) {
  last_refresh_ns_ = monotonic_now_ns();
  ++maps_reads_;
  const std::string maps = "/proc/" + std::to_string(pid_) + "/maps";
  FILE* f = std::fopen(maps.c_str(), "re");
  if (f == nullptr) {
    *error = maps + ": " + std::strerror(errno);
    return false;
  }
  // A PyTorch process has ~2,000 lines, a few hundred executable: a large buffer (few read calls)
  // and the permissions checked before the full parse keep a refresh cheap.
  char buffer[1 << 16];
  std::setvbuf(f, buffer, _IOFBF, sizeof(buffer));
  char line[4096 + 256];
  not_code_.clear();
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    const char* space = std::strchr(line, ' ');  // "start-end perms ..."
    if (space == nullptr || std::strlen(space) < 5) continue;
    if (space[3] != 'x') {
      char* dash = nullptr;
      const uint64_t start = std::strtoull(line, &dash, 16);
      if (dash != nullptr && *dash == '-')
        not_code_.emplace_back(start, std::strtoull(dash + 1, nullptr, 16));
      continue;
    }
    uint64_t start = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {0};
    int path_at = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*x:%*x %" SCNu64 " %n", &start, &end,
                    perms, &offset, &inode, &path_at) < 5)
      continue;
    if (std::strchr(perms, 'x') == nullptr) continue;
    std::string path = line + path_at;
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    if (find_no_refresh(start) != nullptr && find_no_refresh(start)->start == start &&
        find_no_refresh(start)->end == end && find_no_refresh(start)->path == path)
      continue;  // known
    add(start, end - start, offset, path, {}, 0);
  }
  std::fclose(f);
  return true;
}

std::string MappingTable::read_build_id(const std::string& path) {
  auto it = build_ids_.find(path);
  if (it != build_ids_.end()) return it->second;
  std::string id;
  std::string error;
  auto image = symbolize::ElfImage::open(root_ + path, &error);
  if (image) {
    id = image->build_id();
    images_.emplace(path, std::move(image));  // the unwinder will want it too
  } else {
    image_failed_[path] = true;
  }
  build_ids_.emplace(path, id);
  return id;
}

void MappingTable::add(uint64_t start, uint64_t length, uint64_t pgoff, const std::string& path,
                       std::string build_id, int64_t time_ns) {
  Mapping m;
  if (length == 0 || !checked_add(start, length, &m.end)) return;  // a record past 2^64: not a mapping
  m.start = start;
  m.pgoff = pgoff;
  m.time_ns = time_ns;
  m.flags = format::kMappingExec;
  // perf's MMAP2 records name anonymous executable memory (JIT code) "//anon", /proc/PID/maps
  // leaves it empty: both are anonymous, not a file to symbolize.
  if (path.empty() || path == "//anon") {
    m.path = "//anon";
    m.flags |= format::kMappingAnonymous;
  } else if (path[0] != '/') {
    m.path = path;  // [vdso], [vsyscall], [anon:...]
    m.flags |= format::kMappingAnonymous;
  } else {
    m.path = path;
    const std::string deleted = " (deleted)";
    if (m.path.size() > deleted.size() &&
        m.path.compare(m.path.size() - deleted.size(), deleted.size(), deleted) == 0)
      m.path.resize(m.path.size() - deleted.size());
    if (build_id.empty()) {
      m.build_id = read_build_id(m.path);
    } else {
      m.build_id = std::move(build_id);
      build_ids_.emplace(m.path, m.build_id);
    }
  }
  insert(std::move(m));
}

void MappingTable::insert(Mapping m) {
  // A new mapping replaces whatever overlapped it (munmap + mmap at the same place).
  auto it = by_start_.lower_bound(m.start);
  if (it != by_start_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > m.start) it = prev;
  }
  while (it != by_start_.end() && it->second.start < m.end) it = by_start_.erase(it);
  m.id = next_id_++;
  ++generation_;
  pending_.push_back(m);
  by_start_.emplace(m.start, std::move(m));
}

const Mapping* MappingTable::find_no_refresh(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  if (it == by_start_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

const Mapping* MappingTable::below(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  if (it == by_start_.begin()) return nullptr;
  return &std::prev(it)->second;
}

const Mapping* MappingTable::above(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  return it == by_start_.end() ? nullptr : &it->second;
}

const Mapping* MappingTable::find(uint64_t address, bool leaf) {
  if (const Mapping* m = find_no_refresh(address)) return m;
  // A mapping whose MMAP2 record we have not read yet (another CPU's ring), or made before the
  // records were on: read the maps again, at most every 50 ms.
  // A refresh that still does not cover the address (a garbage return address from a frame-pointer
  // walk through code without frame pointers, a JIT page gone again) quadruples the wait before the
  // next one, up to 2 s (doubling still re-read ~8 times in a 5 s run): re-reading a large process's maps 20
  // times a second cost more CPU than the sampling itself (PyTorch: ~2,000 lines per read). A refresh that
  // finds it resets the wait. Most misses are garbage from frame-pointer walks: ASCII text, heap and data
  // pointers. A re-read costs ~2 ms on PyTorch (~2,000 lines), and the back-off alone still allowed ~10 a
  // run, each for an address that could not be code: 15-20% of the sampling thread's CPU at 999 Hz.
  if ((complete_by_records_ && !leaf) || !may_be_code(address)) return nullptr;
  const int64_t now = monotonic_now_ns();
  if (now - last_refresh_ns_ < refresh_interval_ns_) return nullptr;
  std::string error;
  load_proc_maps(&error);
  const Mapping* m = find_no_refresh(address);
  refresh_interval_ns_ = m != nullptr ? kMinRefreshNs : std::min(refresh_interval_ns_ * 4, kMaxRefreshNs);
  return m;
}

bool MappingTable::may_be_code(uint64_t address) const {
  // User space ends below 2^47 (2^56 with 5-level page tables), and starts at vm.mmap_min_addr:
  // nothing outside can be mapped (small integers are the commonest garbage).
  if (address >= (uint64_t{1} << 56) || address < lowest_mappable_) return false;
  auto it = std::upper_bound(not_code_.begin(), not_code_.end(), address,
                             [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.first; });
  return it == not_code_.begin() || address >= std::prev(it)->second;
}

void MappingTable::take_new(std::vector<MappingDef>* out) {
  for (Mapping& m : pending_) {
    MappingDef d;
    d.mapping.id = m.id;
    d.mapping.start = m.start;
    d.mapping.end = m.end;
    d.mapping.file_offset = m.pgoff;
    d.mapping.time_ns = m.time_ns;
    d.mapping.flags = m.flags;
    d.mapping.build_id = m.build_id;
    d.path_text = m.path;
    out->push_back(std::move(d));
  }
  pending_.clear();
}

const symbolize::ElfImage* MappingTable::image(const Mapping& m) {
  if (!m.file_backed()) return nullptr;
  auto it = images_.find(m.path);
  if (it != images_.end()) return it->second.get();
  if (image_failed_.count(m.path)) return nullptr;
  std::string error;
  auto image = symbolize::ElfImage::open(root_ + m.path, &error);
  if (!image) {
    image_failed_[m.path] = true;
    return nullptr;
  }
  return images_.emplace(m.path, std::move(image)).first->second.get();
}

bool MappingTable::load_bias(const Mapping& m, uint64_t* bias) {
  const symbolize::ElfImage* img = image(m);
  if (img == nullptr) return false;
  // The PT_LOAD segment whose file bytes hold the mapping's first byte gives the bias.
  for (const symbolize::ElfSegment& s : img->loads()) {
    if (m.pgoff >= (s.offset & ~uint64_t{0xFFF}) && m.pgoff < s.offset + s.filesz) {
      *bias = m.start - m.pgoff - (s.vaddr - s.offset);
      return true;
    }
  }
  return false;
}

}  // namespace strata::sample
