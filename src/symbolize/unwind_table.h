// Function ranges from a module's unwind tables (.eh_frame_hdr's binary search table and the FDEs
// of .eh_frame it points to). A stripped library (Debian's libtorch_cpu.so: .dynsym only) still
// has an FDE for nearly every function, so samples in its unnamed functions can be grouped by the
// function that contains them rather than by each sampled address. Nothing read from the file is
// trusted: every offset, length and count is checked against the bytes, and a malformed table gives
// an error line (and no ranges, or fewer), never a crash or a read out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::symbolize {

struct ElfSegment;

struct FunctionRange {
  uint64_t start = 0;  // link-time virtual address of the function's first byte
  uint64_t size = 0;
};

struct FunctionRanges {
  std::vector<FunctionRange> ranges;  // sorted by start
  uint64_t fde_count = 0;             // entries in .eh_frame_hdr's table (as the file says)
  uint64_t skipped = 0;               // FDEs left out (unsupported encoding, damaged entry)
  std::string error;                  // "" when every entry was read
};

// Where .eh_frame_hdr lies: its file offset, size and link-time address.
struct EhFrameHdrLocation {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t vaddr = 0;
};

// Reads the table of `file` (the whole ELF file) at `hdr`; `loads` translate the table's addresses
// into file offsets. At most kMaxFdes entries are read (a hostile count cannot take minutes).
FunctionRanges read_function_ranges(std::string_view file, const EhFrameHdrLocation& hdr,
                                    const std::vector<ElfSegment>& loads);
inline constexpr uint64_t kMaxFdes = uint64_t{1} << 23;

// The range containing `vaddr`, or null.
const FunctionRange* find_function_range(const std::vector<FunctionRange>& ranges, uint64_t vaddr);

}  // namespace strata::symbolize
