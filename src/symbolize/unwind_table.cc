#include "symbolize/unwind_table.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "symbolize/elf_image.h"

namespace strata::symbolize {
namespace {

// DWARF pointer encodings (DW_EH_PE_*): the low nibble is the format, bits 4-6 the base it is
// relative to, bit 7 an indirection.
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kAbsptr = 0x00, kUdata2 = 0x02, kUdata4 = 0x03, kUdata8 = 0x04;
constexpr uint8_t kSdata2 = 0x0a, kSdata4 = 0x0b, kSdata8 = 0x0c;
constexpr uint8_t kPcrel = 0x10, kDatarel = 0x30;

// Reads little-endian values from [pos, end) of the file; any read past `end` fails and leaves the
// cursor failed, so a parse checks `ok` once at the end instead of after every field.
struct Cursor {
  std::string_view file;
  uint64_t pos = 0;
  uint64_t end = 0;
  bool ok = true;

  bool take(void* out, uint64_t n) {
    if (!ok || pos > end || end - pos < n) return ok = false;
    std::memcpy(out, file.data() + pos, n);
    pos += n;
    return true;
  }
  template <typename T>
  T read() {
    T v{};
    take(&v, sizeof(T));
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; ok; shift += 7) {
      uint8_t b = read<uint8_t>();
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) break;
      if (shift > 70) ok = false;  // longer than any 64-bit value
    }
    return v;
  }
};

// The size of a fixed-size pointer format, 0 for those this reader does not take (LEB128, which
// no x86-64 toolchain emits for addresses, and the undefined nibbles).
unsigned format_size(uint8_t enc) {
  switch (enc & 0x0f) {
    case kAbsptr:
      return 8;
    case kUdata2:
    case kSdata2:
      return 2;
    case kUdata4:
    case kSdata4:
      return 4;
    case kUdata8:
    case kSdata8:
      return 8;
    default:
      return 0;
  }
}

// One encoded pointer at the cursor. `field_vaddr`: the link-time address of the field (pcrel);
// `data_base`: .eh_frame_hdr's address (datarel, as the header's table uses it). False for an
// encoding this reader does not take or a read past the end.
bool read_encoded(Cursor& c, uint8_t enc, uint64_t field_vaddr, uint64_t data_base, uint64_t* out) {
  if (enc == kOmit || (enc & 0x80) != 0) return false;
  uint64_t v = 0;
  switch (enc & 0x0f) {
    case kAbsptr:
    case kUdata8:
    case kSdata8:
      v = c.read<uint64_t>();
      break;
    case kUdata2:
      v = c.read<uint16_t>();
      break;
    case kUdata4:
      v = c.read<uint32_t>();
      break;
    case kSdata2:
      v = static_cast<uint64_t>(int64_t{c.read<int16_t>()});
      break;
    case kSdata4:
      v = static_cast<uint64_t>(int64_t{c.read<int32_t>()});
      break;
    default:
      return false;
  }
  if (!c.ok) return false;
  switch (enc & 0x70) {
    case 0:
      break;
    case kPcrel:
      v += field_vaddr;
      break;
    case kDatarel:
      v += data_base;
      break;
    default:
      return false;  // textrel, funcrel, aligned: not used for x86-64 code addresses
  }
  *out = v;
  return true;
}

// .eh_frame's bytes as file offsets, and the constant that turns one into a link-time address
// (wrapping arithmetic: vaddr = offset + delta).
struct Region {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t delta = 0;
};

struct Cie {
  const char* problem = nullptr;  // why its FDEs cannot be read; null when fine
  uint8_t fde_encoding = kAbsptr;
};

// The length field of a CIE or FDE at `c`: narrows c.end to the entry and returns whether the
// entry uses the 64-bit form (an 8-byte CIE pointer / id).
const char* read_length(Cursor& c, bool* is64) {
  uint64_t length = c.read<uint32_t>();
  *is64 = length == 0xffffffffu;
  if (*is64) length = c.read<uint64_t>();
  if (!c.ok) return "entry header past the end of .eh_frame";
  if (length == 0) return "a terminator where an entry should be";
  if (length > c.end - c.pos) return "entry length past the end of .eh_frame";
  c.end = c.pos + length;
  return nullptr;
}

// The augmentation data of a "z..." CIE: what matters here is 'R' (the FDEs' pointer encoding).
const char* read_augmentation(Cursor& c, std::string_view aug, const Region& r, Cie* cie) {
  const uint64_t length = c.uleb();
  if (!c.ok || length > c.end - c.pos) return "CIE augmentation data past its end";
  const uint64_t data_end = c.pos + length;
  for (size_t i = 1; i < aug.size(); ++i) {
    switch (aug[i]) {
      case 'R':
        cie->fde_encoding = c.read<uint8_t>();
        break;
      case 'L':
        c.read<uint8_t>();
        break;
      case 'S':
      case 'B':
        break;
      case 'P': {
        const uint8_t enc = c.read<uint8_t>();
        uint64_t personality = 0;
        if (!read_encoded(c, enc & 0x7f, c.pos + r.delta, 0, &personality))
          return "unsupported personality pointer encoding";
        break;
      }
      default:
        // An unknown letter: its data's size is unknown, the augmentation length skips the rest,
        // which is fine unless the encoding this reader needs comes after it.
        if (aug.find('R', i) != std::string_view::npos) return "unknown CIE augmentation before 'R'";
        c.pos = data_end;
        return nullptr;
    }
  }
  if (!c.ok || c.pos > data_end) return "CIE augmentation data past its end";
  return nullptr;
}

Cie read_cie(std::string_view file, const Region& r, uint64_t offset) {
  Cie cie;
  Cursor c{file, offset, r.end};
  bool is64 = false;
  if ((cie.problem = read_length(c, &is64)) != nullptr) return cie;
  const uint64_t id = is64 ? c.read<uint64_t>() : c.read<uint32_t>();
  const uint8_t version = c.read<uint8_t>();
  if (!c.ok || id != 0) return {"the CIE pointer does not lead to a CIE", kAbsptr};
  if (version != 1 && version != 3 && version != 4) return {"unsupported CIE version", kAbsptr};
  std::string_view rest = file.substr(c.pos, std::min<uint64_t>(c.end - c.pos, 32));
  const size_t nul = rest.find('\0');
  if (nul == std::string_view::npos) return {"CIE augmentation string unterminated or too long", kAbsptr};
  const std::string_view aug = rest.substr(0, nul);
  c.pos += nul + 1;
  if (version == 4) c.pos += 2;  // address size, segment selector size
  c.uleb();                      // code alignment
  c.uleb();                      // data alignment (SLEB128: only skipped)
  if (version == 1)
    c.read<uint8_t>();
  else
    c.uleb();  // return address register
  if (!c.ok) return {"CIE too short", kAbsptr};
  if (aug.empty()) return cie;
  if (aug[0] != 'z') return {"CIE augmentation without 'z' (layout unknown)", kAbsptr};
  cie.problem = read_augmentation(c, aug, r, &cie);
  return cie;
}

// One FDE's range; on failure returns why (the FDE is skipped and counted).
class FdeReader {
 public:
  FdeReader(std::string_view file, Region region, uint64_t data_base)
      : file_(file), r_(region), data_base_(data_base) {}

  const char* read(uint64_t fde_vaddr, uint64_t expected_start, FunctionRange* out) {
    const uint64_t offset = fde_vaddr - r_.delta;
    if (offset < r_.begin || offset >= r_.end) return "FDE address outside .eh_frame";
    Cursor c{file_, offset, r_.end};
    bool is64 = false;
    if (const char* problem = read_length(c, &is64)) return problem;
    const uint64_t id_at = c.pos;
    const uint64_t cie_pointer = is64 ? c.read<uint64_t>() : c.read<uint32_t>();
    if (!c.ok) return "FDE too short";
    if (cie_pointer == 0) return "a CIE where an FDE should be";
    if (cie_pointer > id_at - r_.begin) return "CIE pointer out of range";
    const Cie& cie = cie_at(id_at - cie_pointer);
    if (cie.problem != nullptr) return cie.problem;
    uint64_t start = 0, size = 0;
    if (!read_encoded(c, cie.fde_encoding, c.pos + r_.delta, data_base_, &start) ||
        !read_encoded(c, cie.fde_encoding & 0x0f, 0, 0, &size))
      return "unsupported or truncated FDE pointer encoding";
    if (start != expected_start) return "FDE start differs from .eh_frame_hdr's entry";
    *out = {start, size};
    return nullptr;
  }

 private:
  const Cie& cie_at(uint64_t offset) {
    // Nearly every FDE of a library shares one or two CIEs: the last one answers most lookups.
    if (last_ != nullptr && last_offset_ == offset) return *last_;
    auto it = cies_.find(offset);
    if (it == cies_.end()) it = cies_.emplace(offset, read_cie(file_, r_, offset)).first;
    last_offset_ = offset;
    last_ = &it->second;
    return *last_;
  }

  std::string_view file_;
  Region r_;
  uint64_t data_base_;
  std::unordered_map<uint64_t, Cie> cies_;
  uint64_t last_offset_ = 0;
  const Cie* last_ = nullptr;
};

std::optional<Region> region_of(const std::vector<ElfSegment>& loads, std::string_view file, uint64_t vaddr) {
  for (const ElfSegment& s : loads) {
    if (vaddr < s.vaddr || vaddr - s.vaddr >= s.filesz || s.offset > file.size()) continue;
    const uint64_t end = s.offset + std::min<uint64_t>(s.filesz, file.size() - s.offset);
    const uint64_t begin = s.offset + (vaddr - s.vaddr);
    if (begin < end) return Region{begin, end, s.vaddr - s.offset};
  }
  return std::nullopt;
}

FunctionRanges fail(FunctionRanges out, std::string error) {
  out.ranges.clear();
  out.error = std::move(error);
  return out;
}

}  // namespace

FunctionRanges read_function_ranges(std::string_view file, const EhFrameHdrLocation& hdr,
                                    const std::vector<ElfSegment>& loads) {
  FunctionRanges out;
  if (hdr.offset > file.size() || hdr.size > file.size() - hdr.offset || hdr.size < 4)
    return fail(std::move(out), ".eh_frame_hdr: truncated");
  Cursor h{file, hdr.offset, hdr.offset + hdr.size};
  const uint8_t version = h.read<uint8_t>();
  const uint8_t frame_enc = h.read<uint8_t>();
  const uint8_t count_enc = h.read<uint8_t>();
  const uint8_t table_enc = h.read<uint8_t>();
  if (version != 1)
    return fail(std::move(out), ".eh_frame_hdr: unsupported version " + std::to_string(version));
  auto field_vaddr = [&] { return hdr.vaddr + (h.pos - hdr.offset); };
  uint64_t eh_frame = 0;
  if (frame_enc != kOmit && !read_encoded(h, frame_enc, field_vaddr(), hdr.vaddr, &eh_frame))
    return fail(std::move(out), ".eh_frame_hdr: unsupported or truncated .eh_frame pointer");
  if (count_enc == kOmit || table_enc == kOmit) return fail(std::move(out), ".eh_frame_hdr: no search table");
  if ((count_enc & 0x70) != 0 || !read_encoded(h, count_enc, 0, 0, &out.fde_count))
    return fail(std::move(out), ".eh_frame_hdr: unsupported or truncated FDE count");
  const unsigned entry = format_size(table_enc);
  if (entry == 0) return fail(std::move(out), ".eh_frame_hdr: unsupported table encoding");
  // The count is checked against the bytes that hold the table, so it cannot ask for more work than
  // the file has entries for; kMaxFdes bounds a huge file.
  if (out.fde_count > (h.end - h.pos) / (2 * entry))
    return fail(std::move(out),
                ".eh_frame_hdr: FDE count " + std::to_string(out.fde_count) + " past the table's end");
  if (out.fde_count > kMaxFdes) return fail(std::move(out), ".eh_frame_hdr: more than kMaxFdes FDEs");
  // .eh_frame's extent: from its start (CIE pointers must not lead before it) to the end of its
  // segment's file bytes.
  auto region = region_of(loads, file, frame_enc != kOmit ? eh_frame : hdr.vaddr);
  if (!region) return fail(std::move(out), ".eh_frame_hdr: .eh_frame outside every loaded segment");
  FdeReader reader(file, *region, hdr.vaddr);
  out.ranges.reserve(out.fde_count);
  std::string first_problem;
  for (uint64_t i = 0; i < out.fde_count; ++i) {
    uint64_t start = 0, fde = 0;
    if (!read_encoded(h, table_enc, field_vaddr(), hdr.vaddr, &start) ||
        !read_encoded(h, table_enc, field_vaddr(), hdr.vaddr, &fde))
      return fail(std::move(out), ".eh_frame_hdr: unreadable table entry " + std::to_string(i));
    if (!out.ranges.empty() && start < out.ranges.back().start)
      return fail(std::move(out), ".eh_frame_hdr: table not sorted at entry " + std::to_string(i));
    FunctionRange range;
    if (const char* problem = reader.read(fde, start, &range)) {
      if (out.skipped++ == 0) first_problem = "entry " + std::to_string(i) + ": " + problem;
      // Keep the sort check working across a skipped entry.
      out.ranges.push_back({start, 0});
      continue;
    }
    out.ranges.push_back(range);
  }
  // Skipped entries held their place with size 0 (for the sort check): drop them.
  std::erase_if(out.ranges, [](const FunctionRange& f) { return f.size == 0; });
  if (out.skipped > 0)
    out.error = ".eh_frame: " + std::to_string(out.skipped) + " of " + std::to_string(out.fde_count) +
                " FDEs skipped (first: " + first_problem + ")";
  return out;
}

const FunctionRange* find_function_range(const std::vector<FunctionRange>& ranges, uint64_t vaddr) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), vaddr,
                             [](uint64_t v, const FunctionRange& f) { return v < f.start; });
  if (it == ranges.begin()) return nullptr;
  --it;
  return vaddr - it->start < it->size ? &*it : nullptr;
}

}  // namespace strata::symbolize
