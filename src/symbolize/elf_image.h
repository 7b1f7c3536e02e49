// A read-only view of an ELF64 little-endian file (a shared library, an executable, a separate debug
// file): segments, build id, .gnu_debuglink, function symbols. Mapped with mmap (pages never touched
// cost nothing, so a 400 MB libtorch costs only what is read). No offset, size or count in the file
// is trusted: everything is checked against the file's size, and a malformed file gives an error
// line, never a crash. Shared by the sampler (build ids, unwind tables) and the symbolizer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/unwind_table.h"

namespace strata::symbolize {

struct ElfSegment {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  uint32_t flags = 0;  // PF_X = 1, PF_W = 2, PF_R = 4
};

struct ElfSymbol {
  uint64_t address = 0;  // link-time virtual address
  uint64_t size = 0;
  std::string_view name;  // points into the image
};

class ElfImage {
 public:
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  // Maps `path`, opened through core::open_named_file (a regular file of at most kMaxElfFileBytes,
  // never blocking; a refused one is counted); null with *error set ("PATH: not an ELF file", ...)
  // when it cannot be used.
  static constexpr uint64_t kMaxElfFileBytes = uint64_t{16} << 30;  // libtorch_cuda's debug file: ~4 GB
  static std::unique_ptr<ElfImage> open(const std::string& path, std::string* error);
  // An image over bytes held in memory (tests, fuzzing).
  static std::unique_ptr<ElfImage> from_bytes(std::string bytes, std::string* error);

  std::string_view bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // Raw bytes of the NT_GNU_BUILD_ID note (empty when the file has none).
  const std::string& build_id() const { return build_id_; }
  const std::vector<ElfSegment>& loads() const { return loads_; }
  const std::optional<ElfSegment>& eh_frame_hdr() const { return eh_frame_hdr_; }
  // .gnu_debuglink: the separate debug file's name and the CRC-32 of its contents.
  const std::string& debuglink() const { return debuglink_; }
  uint32_t debuglink_crc() const { return debuglink_crc_; }
  bool has_symtab() const { return has_symtab_; }

  // Translations between a file offset and a link-time virtual address through the PT_LOAD
  // segments; nullopt outside every segment's file bytes.
  std::optional<uint64_t> file_offset_to_vaddr(uint64_t offset) const;
  std::optional<uint64_t> vaddr_to_file_offset(uint64_t vaddr) const;

  // Functions (STT_FUNC, STT_GNU_IFUNC) from .symtab and .dynsym, sorted by address, duplicates
  // (same address and name) removed. Names point into the image.
  std::vector<ElfSymbol> function_symbols() const;
  // The address and size of the function `name` (.dynsym or .symtab), or nullopt.
  std::optional<ElfSymbol> find_function(std::string_view name) const;
  // Any defined symbol (function or data object) named `name`.
  std::optional<ElfSymbol> find_symbol(std::string_view name) const;
  // Function ranges from the unwind tables (.eh_frame_hdr's search table and .eh_frame's FDEs):
  // where a stripped module's unnamed functions start and end. Read on first use and kept (220,000
  // FDEs of libtorch_cpu take tens of milliseconds); empty with `error` set when the table is
  // missing or malformed. A separate debug file has none (its .eh_frame is SHT_NOBITS).
  const FunctionRanges& function_ranges() const;

 private:
  ElfImage() = default;
  bool parse(std::string* error);
  void read_symbols(uint32_t symtab_index, std::vector<ElfSymbol>* out, bool functions_only = true) const;
  std::string_view section_bytes(uint32_t index) const;

  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string owned_;  // from_bytes
  std::string build_id_;
  std::vector<ElfSegment> loads_;
  std::optional<ElfSegment> eh_frame_hdr_;
  std::string debuglink_;
  uint32_t debuglink_crc_ = 0;
  bool has_symtab_ = false;
  struct Section {
    uint32_t type = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint32_t link = 0;
    uint64_t entsize = 0;
    uint64_t addr = 0;
    std::string_view name;
  };
  std::vector<Section> sections_;
  mutable std::once_flag ranges_once_;
  mutable FunctionRanges ranges_;
};

// CRC-32 (the zlib polynomial) as .gnu_debuglink uses it.
uint32_t debuglink_crc32(std::string_view bytes, uint32_t crc = 0);

std::string hex_bytes(std::string_view raw);

}  // namespace strata::symbolize
