// Function ranges from unwind tables (.eh_frame_hdr + .eh_frame) and the symbolizer's use of them
// for stripped modules: checked against a real program's .symtab (the fixture built by CMake and
// its stripped copy), against Debian's libtorch_cpu when installed, and with hostile tables made by
// patching the fixture's bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../test_util.h"
#include "symbolize/elf_image.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind_table.h"

namespace strata::symbolize {
namespace {

const std::string kFixture = STRATA_UNWIND_FIXTURE;
const std::string kStripped = STRATA_UNWIND_FIXTURE_STRIPPED;

std::unique_ptr<ElfImage> open_image(const std::string& path) {
  std::string error;
  auto image = ElfImage::open(path, &error);
  EXPECT_NE(image, nullptr) << error;
  return image;
}

std::string hex_name(const std::string& path, uint64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(offset));
  return Symbolizer::module_name(path) + buf;
}

Symbolizer plain_symbolizer() {
  SymbolizerOptions options;
  options.debug_dirs.clear();  // only the file itself: no debug file found by chance
  return Symbolizer(options);
}

TEST(UnwindTable, FixtureRangesAreSortedAndComplete) {
  auto image = open_image(kStripped);
  ASSERT_NE(image, nullptr);
  const FunctionRanges& f = image->function_ranges();
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(f.skipped, 0u);
  EXPECT_EQ(f.ranges.size(), f.fde_count);
  EXPECT_GE(f.ranges.size(), 290u);
  for (size_t i = 1; i < f.ranges.size(); ++i)
    EXPECT_LE(f.ranges[i - 1].start + f.ranges[i - 1].size, f.ranges[i].start) << i;
  EXPECT_EQ(&image->function_ranges(), &f);  // computed once
}

// Every function of the unstripped program: its first, middle and last byte, looked up in the
// stripped copy, name the function's start.
TEST(UnwindTable, StrippedLookupsMatchTheSymbolTable) {
  auto full = open_image(kFixture);
  ASSERT_NE(full, nullptr);
  ASSERT_TRUE(full->has_symtab());
  Symbolizer symbolizer = plain_symbolizer();
  size_t functions = 0, fixture_functions = 0, uncovered = 0;
  for (const ElfSymbol& sym : full->function_symbols()) {
    if (sym.size == 0) continue;
    ++functions;
    if (std::string_view(sym.name).starts_with("fn_")) ++fixture_functions;
    auto start = full->vaddr_to_file_offset(sym.address);
    ASSERT_TRUE(start) << sym.name;
    for (uint64_t delta : {uint64_t{0}, sym.size / 2, sym.size - 1}) {
      Symbol s = symbolizer.lookup(kStripped, "", *start + delta);
      if (!s.from_unwind_table) {
        // Only code without CFI may be missing (the C runtime's _init / _fini stubs).
        EXPECT_TRUE(sym.name == "_init" || sym.name == "_fini") << sym.name << " +" << delta;
        ++uncovered;
        continue;
      }
      EXPECT_EQ(s.function_address, sym.address) << sym.name << " +" << delta;
      EXPECT_EQ(s.function_offset, delta) << sym.name;
      EXPECT_EQ(s.function, hex_name(kStripped, *start)) << sym.name;
      EXPECT_FALSE(s.known);
    }
  }
  EXPECT_GE(fixture_functions, 290u);
  std::printf("fixture: %zu sized functions (%zu fn_*), %zu lookups without an FDE\n", functions,
              fixture_functions, uncovered);
  // The unstripped copy still names them: a covering symbol wins over the FDE.
  const ElfSymbol first = *full->find_function("fn_10");
  Symbol named = symbolizer.lookup(kFixture, "", *full->vaddr_to_file_offset(first.address) + 1);
  EXPECT_TRUE(named.known);
  EXPECT_FALSE(named.from_unwind_table);
  EXPECT_EQ(named.function, "fn_10");
}

TEST(UnwindTable, LibtorchCpu) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not installed";
  auto image = open_image(path);
  ASSERT_NE(image, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const FunctionRanges& f = image->function_ranges();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("libtorch_cpu: %zu ranges of %llu FDEs (%llu skipped) in %.1f ms\n", f.ranges.size(),
              static_cast<unsigned long long>(f.fde_count), static_cast<unsigned long long>(f.skipped), ms);
  EXPECT_EQ(f.error, "");
  EXPECT_GT(f.fde_count, 100000u);
  EXPECT_EQ(f.ranges.size(), f.fde_count);
  // The time is printed, never asserted: the machine is shared and ASan runs this ~10x slower.
  size_t overlaps = 0;
  for (size_t i = 1; i < f.ranges.size(); ++i) {
    ASSERT_LE(f.ranges[i - 1].start, f.ranges[i].start);
    if (f.ranges[i - 1].start + f.ranges[i - 1].size > f.ranges[i].start) ++overlaps;
  }
  EXPECT_EQ(overlaps, 0u);
  size_t exported = 0, not_fde_start = 0, inside_other = 0;
  for (const ElfSymbol& sym : image->function_symbols()) {
    ++exported;
    const FunctionRange* r = find_function_range(f.ranges, sym.address);
    if (r != nullptr && r->start == sym.address) continue;
    ++not_fde_start;
    if (r != nullptr) ++inside_other;
    if (not_fde_start <= 5)
      std::printf("  not an FDE start: %s at 0x%llx (%s)\n", demangle(sym.name).substr(0, 80).c_str(),
                  static_cast<unsigned long long>(sym.address), r ? "inside another FDE" : "in no FDE");
  }
  std::printf("libtorch_cpu: %zu .dynsym functions, %zu not an FDE start (%zu inside another FDE)\n",
              exported, not_fde_start, inside_other);
  EXPECT_LT(not_fde_start * 100, exported);  // under 1%
}

// ---- Hostile tables: the fixture's bytes, patched.

struct Layout {
  std::string bytes;
  uint64_t hdr = 0;  // file offset of .eh_frame_hdr
  uint64_t hdr_vaddr = 0;
  uint64_t phdr = 0;  // file offset of the PT_GNU_EH_FRAME program header
  uint64_t fde_count = 0;
};

Layout fixture_layout() {
  Layout l;
  l.bytes = testing::read_file(kStripped);
  auto image = open_image(kStripped);
  EXPECT_TRUE(image && image->eh_frame_hdr());
  if (!image || !image->eh_frame_hdr()) return l;
  l.hdr = image->eh_frame_hdr()->offset;
  l.hdr_vaddr = image->eh_frame_hdr()->vaddr;
  l.fde_count = image->function_ranges().fde_count;
  // The usual encodings: .eh_frame pointer pcrel sdata4, count udata4, table datarel sdata4.
  EXPECT_EQ(static_cast<uint8_t>(l.bytes[l.hdr + 1]), 0x1b);
  EXPECT_EQ(static_cast<uint8_t>(l.bytes[l.hdr + 2]), 0x03);
  EXPECT_EQ(static_cast<uint8_t>(l.bytes[l.hdr + 3]), 0x3b);
  uint64_t phoff = 0;
  uint16_t phnum = 0;
  std::memcpy(&phoff, l.bytes.data() + 32, 8);
  std::memcpy(&phnum, l.bytes.data() + 56, 2);
  for (uint16_t i = 0; i < phnum; ++i) {
    uint32_t type = 0;
    std::memcpy(&type, l.bytes.data() + phoff + i * 56u, 4);
    if (type == 0x6474e550) l.phdr = phoff + i * 56u;  // PT_GNU_EH_FRAME
  }
  EXPECT_NE(l.phdr, 0u);
  return l;
}

template <typename T>
void poke(std::string* bytes, uint64_t at, T v) {
  ASSERT_LE(at + sizeof(T), bytes->size());
  std::memcpy(bytes->data() + at, &v, sizeof(T));
}
template <typename T>
T peek(const std::string& bytes, uint64_t at) {
  T v{};
  if (at + sizeof(T) <= bytes.size()) std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

uint64_t table_entry(const Layout& l, uint64_t i) { return l.hdr + 12 + 8 * i; }

// The file offset of table entry i's FDE, and of the function it describes.
uint64_t fde_offset(const Layout& l, const ElfImage& image, uint64_t i) {
  const int32_t rel = peek<int32_t>(l.bytes, table_entry(l, i) + 4);
  return image.vaddr_to_file_offset(l.hdr_vaddr + static_cast<int64_t>(rel)).value_or(0);
}
uint64_t function_offset(const Layout& l, const ElfImage& image, uint64_t i) {
  const int32_t rel = peek<int32_t>(l.bytes, table_entry(l, i));
  return image.vaddr_to_file_offset(l.hdr_vaddr + static_cast<int64_t>(rel)).value_or(0);
}

// Opens the patched bytes (ElfImage and, through a file, the symbolizer): the table must give an
// error and no range for entry `entry`'s function, whose middle then reads as today's
// module+0xOFFSET of the address itself. Returns the error.
std::string check_rejected(const std::string& patched, uint64_t entry_function, uint64_t entry_size) {
  std::string error;
  auto image = ElfImage::from_bytes(patched, &error);
  EXPECT_NE(image, nullptr) << error;
  if (!image) return "";
  const FunctionRanges& f = image->function_ranges();
  EXPECT_NE(f.error, "");
  testing::TempDir dir;
  const std::string path = dir.file("patched");
  testing::write_file(path, patched);
  Symbolizer symbolizer = plain_symbolizer();
  const uint64_t at = entry_function + entry_size / 2;
  Symbol s = symbolizer.lookup(path, "", at);
  EXPECT_FALSE(s.from_unwind_table);
  EXPECT_EQ(s.function, hex_name(path, at));
  EXPECT_EQ(s.function_address, 0u);
  return f.error;
}

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override {
    l_ = fixture_layout();
    image_ = open_image(kStripped);
    ASSERT_NE(image_, nullptr);
    ASSERT_GT(l_.fde_count, 10u);
    fde_ = fde_offset(l_, *image_, kEntry);
    function_ = function_offset(l_, *image_, kEntry);
    ASSERT_NE(fde_, 0u);
    const FunctionRange* r =
        find_function_range(image_->function_ranges().ranges, *image_->file_offset_to_vaddr(function_));
    ASSERT_NE(r, nullptr);
    size_ = r->size;
  }
  static constexpr uint64_t kEntry = 5;
  Layout l_;
  std::unique_ptr<ElfImage> image_;
  uint64_t fde_ = 0, function_ = 0, size_ = 0;
};

TEST_F(Hostile, TruncatedHeader) {
  std::string cut = l_.bytes.substr(0, l_.hdr + 10);
  EXPECT_NE(check_rejected(cut, function_, size_).find("truncated"), std::string::npos);
  std::string short_segment = l_.bytes;
  poke<uint64_t>(&short_segment, l_.phdr + 32, 8);  // p_filesz: the count's last bytes missing
  std::printf("%s\n", check_rejected(short_segment, function_, size_).c_str());
}

TEST_F(Hostile, HugeFdeCount) {
  std::string b = l_.bytes;
  poke<uint32_t>(&b, l_.hdr + 8, 0xfffffff0u);
  // Rejected from the count alone, before any entry is read (no work in proportion to the count).
  std::string error = check_rejected(b, function_, size_);
  EXPECT_NE(error.find("past the table's end"), std::string::npos) << error;
}

TEST_F(Hostile, FdeLengthPastTheEnd) {
  std::string b = l_.bytes;
  poke<uint32_t>(&b, fde_, 0x7ffffff0u);
  std::string error = check_rejected(b, function_, size_);
  EXPECT_NE(error.find("1 of"), std::string::npos) << error;
  EXPECT_NE(error.find("past the end"), std::string::npos) << error;
  std::string error_ext = check_rejected(
      [&] {
        std::string e = l_.bytes;
        poke<uint32_t>(&e, fde_, 0xffffffffu);  // 64-bit length, whose 8 bytes are garbage
        return e;
      }(),
      function_, size_);
  EXPECT_NE(error_ext, "");
}

TEST_F(Hostile, UnknownPointerEncodings) {
  // The table's encoding: nothing can be read.
  std::string b = l_.bytes;
  b[l_.hdr + 3] = 0x0d;
  EXPECT_NE(check_rejected(b, function_, size_).find("table encoding"), std::string::npos);
  // The CIE's 'R' encoding: its FDEs are skipped and counted.
  const uint64_t cie = fde_ + 4 - peek<uint32_t>(l_.bytes, fde_ + 4);
  ASSERT_EQ(l_.bytes.substr(cie + 9, 3), std::string("zR\0", 3));
  ASSERT_EQ(l_.bytes.substr(cie + 12, 4), std::string("\x01\x78\x10\x01", 4));  // alignments, RA, aug length
  ASSERT_EQ(static_cast<uint8_t>(l_.bytes[cie + 16]), 0x1b);
  std::string c = l_.bytes;
  c[cie + 16] = 0x0d;
  std::string error = check_rejected(c, function_, size_);
  EXPECT_NE(error.find("encoding"), std::string::npos) << error;
  // Indirect and textrel: not taken either.
  c[cie + 16] = static_cast<char>(0x9b);
  EXPECT_NE(check_rejected(c, function_, size_), "");
  c[cie + 16] = 0x2b;
  EXPECT_NE(check_rejected(c, function_, size_), "");
}

TEST_F(Hostile, CiePointerOutOfRange) {
  std::string b = l_.bytes;
  poke<uint32_t>(&b, fde_ + 4, 0x7ffffff0u);
  std::string error = check_rejected(b, function_, size_);
  EXPECT_NE(error.find("CIE pointer out of range"), std::string::npos) << error;
  poke<uint32_t>(&b, fde_ + 4, 8);  // inside the previous entry: not a CIE
  EXPECT_NE(check_rejected(b, function_, size_), "");
}

TEST_F(Hostile, TableNotSorted) {
  std::string b = l_.bytes;
  const uint64_t a = table_entry(l_, kEntry - 1), c = table_entry(l_, kEntry);
  const uint64_t first = peek<uint64_t>(b, a), second = peek<uint64_t>(b, c);
  poke<uint64_t>(&b, a, second);
  poke<uint64_t>(&b, c, first);
  std::string error = check_rejected(b, function_, size_);
  EXPECT_NE(error.find("not sorted"), std::string::npos) << error;
  std::string error2;
  auto image = ElfImage::from_bytes(b, &error2);
  ASSERT_NE(image, nullptr);
  EXPECT_TRUE(image->function_ranges().ranges.empty());
}

// A debug file's .eh_frame has no contents: it gives no ranges rather than reading other bytes.
TEST_F(Hostile, NobitsEhFrame) {
  std::string b = l_.bytes;
  uint64_t shoff = peek<uint64_t>(b, 40);
  const uint16_t shnum = peek<uint16_t>(b, 60), shstrndx = peek<uint16_t>(b, 62);
  const uint64_t names = peek<uint64_t>(b, shoff + shstrndx * 64u + 24);
  bool patched = false;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * 64u;
    if (std::strcmp(b.c_str() + names + peek<uint32_t>(b, sh), ".eh_frame") == 0) {
      poke<uint32_t>(&b, sh + 4, 8);  // SHT_NOBITS
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  std::string error;
  auto image = ElfImage::from_bytes(b, &error);
  ASSERT_NE(image, nullptr);
  EXPECT_NE(image->function_ranges().error.find("no contents"), std::string::npos);
  EXPECT_TRUE(image->function_ranges().ranges.empty());
}

// The unstripped fixture with two neighbouring functions' symbols damaged: A's size set to 0 (a
// label-like symbol, which used to claim everything up to the next symbol) and B's type set to
// STT_OBJECT (no longer a function). B's addresses fall through A and get B's FDE, not A's name.
TEST(UnwindTable, SymbolsThatDoNotCoverFallThroughToTheFde) {
  std::string b = testing::read_file(kFixture);
  auto full = open_image(kFixture);
  ASSERT_NE(full, nullptr);
  std::vector<ElfSymbol> fns;
  for (const ElfSymbol& sym : full->function_symbols())
    if (std::string_view(sym.name).starts_with("fn_")) fns.push_back(sym);
  ASSERT_GE(fns.size(), 10u);
  const ElfSymbol a = fns[4], c = fns[5];
  const uint64_t shoff = peek<uint64_t>(b, 40);
  const uint16_t shnum = peek<uint16_t>(b, 60);
  int patched = 0;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * 64u;
    if (peek<uint32_t>(b, sh + 4) != 2) continue;  // SHT_SYMTAB
    const uint64_t table = peek<uint64_t>(b, sh + 24), size = peek<uint64_t>(b, sh + 32);
    const uint64_t names = peek<uint64_t>(b, shoff + peek<uint32_t>(b, sh + 40) * 64u + 24);
    for (uint64_t at = table; at + 24 <= table + size; at += 24) {
      const std::string_view name(b.c_str() + names + peek<uint32_t>(b, at));
      if (name == a.name) {
        poke<uint64_t>(&b, at + 16, 0);
        ++patched;
      } else if (name == c.name) {
        b[at + 4] = static_cast<char>((b[at + 4] & 0xf0) | 1);  // STT_OBJECT
        ++patched;
      }
    }
  }
  ASSERT_EQ(patched, 2);
  testing::TempDir dir;
  const std::string path = dir.file("damaged_symbols");
  testing::write_file(path, b);
  Symbolizer symbolizer = plain_symbolizer();
  const uint64_t c_start = *full->vaddr_to_file_offset(c.address);
  Symbol in_c = symbolizer.lookup(path, "", c_start + c.size / 2);
  EXPECT_TRUE(in_c.from_unwind_table) << in_c.function;
  EXPECT_EQ(in_c.function_address, c.address);
  EXPECT_EQ(in_c.function, hex_name(path, c_start));
  // A's own addresses still name A: a symbol at the FDE's start covers it.
  Symbol in_a = symbolizer.lookup(path, "", *full->vaddr_to_file_offset(a.address) + a.size / 2);
  EXPECT_TRUE(in_a.known);
  EXPECT_EQ(in_a.function, std::string(a.name));
}

// Every prefix of the stripped fixture at 97 lengths: no crash, and a table either read whole or
// refused with an error.
TEST_F(Hostile, Truncations) {
  for (uint64_t n = 64; n < l_.bytes.size(); n += l_.bytes.size() / 97) {
    std::string error;
    auto image = ElfImage::from_bytes(l_.bytes.substr(0, n), &error);
    if (!image) continue;
    const FunctionRanges& f = image->function_ranges();
    EXPECT_TRUE(!f.error.empty() || f.ranges.size() == f.fde_count) << n;
  }
}

}  // namespace
}  // namespace strata::symbolize
