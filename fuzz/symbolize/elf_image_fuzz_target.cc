#include "elf_image_fuzz_target.h"

#include <string>

#include "symbolize/elf_image.h"
#include "symbolize/unwind_table.h"

namespace strata::fuzz {

void run_elf_image(std::string_view bytes) {
  std::string error;
  auto image = symbolize::ElfImage::from_bytes(std::string(bytes), &error);
  if (!image) return;
  image->function_symbols();
  const symbolize::FunctionRanges& f = image->function_ranges();
  if (f.ranges.size() > f.fde_count) __builtin_trap();
  for (size_t i = 1; i < f.ranges.size(); ++i)
    if (f.ranges[i].start < f.ranges[i - 1].start) __builtin_trap();
  // Offsets spread over the file (a prime stride, so every segment gets some), and each range's
  // first and last byte: a lookup returns a range that holds the address, or none.
  auto check = [&](uint64_t vaddr) {
    const symbolize::FunctionRange* r = symbolize::find_function_range(f.ranges, vaddr);
    if (r != nullptr && (vaddr < r->start || vaddr - r->start >= r->size)) __builtin_trap();
  };
  for (uint64_t offset = 0; offset < bytes.size(); offset += 61)
    if (auto vaddr = image->file_offset_to_vaddr(offset)) check(*vaddr);
  for (const symbolize::FunctionRange& r : f.ranges) {
    check(r.start);
    check(r.start + r.size - 1);
    if (find_function_range(f.ranges, r.start) == nullptr) __builtin_trap();
  }
}

}  // namespace strata::fuzz
