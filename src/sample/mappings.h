// The sampled process's executable mappings: read from /proc/PID/maps when sampling starts, then
// kept current from the kernel's MMAP2 records (dlopen, JIT code). Every mapping gets an id and its
// file's build id; frames are recorded as (mapping id, file offset), so a mapping replaced later
// (dlclose + dlopen at the same address) never renames older frames. Also opens the mapped files'
// ELF images for the DWARF unwinder (cached by path). Owned by the sampling thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sample/sample_types.h"
#include "symbolize/elf_image.h"

namespace strata::sample {

struct Mapping {
  uint32_t id = 0;
  uint64_t start = 0, end = 0, pgoff = 0;
  std::string path;
  std::string build_id;  // raw bytes
  int64_t time_ns = 0;
  uint8_t flags = 0;  // format::SampleMappingFlags
  bool file_backed() const { return !path.empty() && path[0] == '/'; }
};

class MappingTable {
 public:
  // `root`: prefix for the process's file paths ("/proc/PID/root" reads a container's files).
  MappingTable(int pid, std::string root);

  // Executable mappings from /proc/PID/maps (all of them: the first call, or after a miss).
  bool load_proc_maps(std::string* error);
  // A new executable mapping (MMAP2). `build_id` may be empty (read from the file then).
  void add(uint64_t start, uint64_t length, uint64_t pgoff, const std::string& path, std::string build_id,
           int64_t time_ns);
  // The mapping holding `address`, or null. A miss re-reads /proc/PID/maps: at most every 50 ms,
  // backing off (x4) to every 2 s while the re-reads do not find the missed addresses; never for an
  // address no user mapping can hold (non-canonical) or one that the last read found inside a
  // mapping that is not executable (heap, data: a frame-pointer walk's garbage "return address").
  // `leaf`: the sampled instruction itself, which must be in some mapping: re-read even when the
  // MMAP2 records are thought complete (a record can arrive after the samples it covers, in another
  // CPU's ring, or be lost; a leaf miss is rare, unlike a caller's garbage).
  const Mapping* find(uint64_t address, bool leaf = false);
  const Mapping* find_no_refresh(uint64_t address) const;
  // The nearest mapping starting at or below / above `address` (a file's other segments lie there).
  const Mapping* below(uint64_t address) const;
  const Mapping* above(uint64_t address) const;
  // Mappings not yet handed to the writer (each once).
  void take_new(std::vector<MappingDef>* out);
  // The mapped file's ELF image (for unwinding); null when it cannot be opened.
  const symbolize::ElfImage* image(const Mapping& m);
  // Load bias of the ELF image for mapping `m`: runtime address = vaddr + bias.
  bool load_bias(const Mapping& m, uint64_t* bias);
  int pid() const { return pid_; }
  uint64_t generation() const { return generation_; }  // bumped when the layout changes (unwind caches)
  uint64_t maps_reads() const { return maps_reads_; }  // reads of /proc/PID/maps, the first included
  // The source reports every new executable mapping (perf_event MMAP2 records, none lost since the
  // maps were read after it started): a miss is then never cured by re-reading /proc/PID/maps.
  void set_complete_by_records(bool complete) { complete_by_records_ = complete; }
  // Whether a miss on `address` may be cured by re-reading /proc/PID/maps (see find()).
  bool may_be_code(uint64_t address) const;

 private:
  void insert(Mapping m);
  std::string read_build_id(const std::string& path);

  int pid_;
  std::string root_;
  uint32_t next_id_ = 1;
  std::map<uint64_t, Mapping> by_start_;          // live mappings, non-overlapping
  std::vector<Mapping> pending_;                  // new, not yet taken
  std::map<std::string, std::string> build_ids_;  // path -> raw build id ("" when none)
  std::map<std::string, std::unique_ptr<symbolize::ElfImage>> images_;
  std::map<std::string, bool> image_failed_;
  int64_t last_refresh_ns_ = 0;
  static constexpr int64_t kMinRefreshNs = 50'000'000, kMaxRefreshNs = 2'000'000'000;
  int64_t refresh_interval_ns_ = kMinRefreshNs;
  uint64_t maps_reads_ = 0;
  // The mappings without execute permission at the last read, by start ([start, end), sorted).
  // A new executable mapping over one of them comes as an MMAP2 record (mmap, or mprotect adding
  // execute) or with the next read: add() puts it in by_start_, which find() asks first.
  std::vector<std::pair<uint64_t, uint64_t>> not_code_;
  uint64_t lowest_mappable_ = 4096;  // vm.mmap_min_addr
  bool complete_by_records_ = false;
  uint64_t generation_ = 0;
};

int64_t monotonic_now_ns();

}  // namespace strata::sample
