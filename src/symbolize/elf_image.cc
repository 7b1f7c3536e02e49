#include "symbolize/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/input_file.h"

namespace strata::symbolize {
namespace {

template <typename T>
bool read_at(std::string_view bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

bool in_bounds(std::string_view bytes, uint64_t offset, uint64_t size) {
  return offset <= bytes.size() && size <= bytes.size() - offset;
}

uint64_t align4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

}  // namespace

std::string hex_bytes(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

uint32_t debuglink_crc32(std::string_view bytes, uint32_t crc) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

ElfImage::~ElfImage() {
  if (mapped_ && data_ != nullptr) munmap(const_cast<char*>(data_), size_);
}

std::unique_ptr<ElfImage> ElfImage::open(const std::string& path, std::string* error) {
  // The path comes from a trace or a sampled process's mappings: a FIFO put where a library was
  // must not block the open (strata profile, report and export hung on one), and is counted.
  uint64_t size = 0;
  const int fd = core::open_named_file(path, kMaxElfFileBytes, &size, error);
  if (fd < 0) return nullptr;
  if (size < sizeof(Elf64_Ehdr)) {
    ::close(fd);
    *error = path + ": not an ELF file (" + std::to_string(size) + " bytes)";
    return nullptr;
  }
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *error = path + ": cannot map: " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<ElfImage> image(new ElfImage());
  image->path_ = path;
  image->data_ = static_cast<const char*>(p);
  image->size_ = static_cast<size_t>(size);
  image->mapped_ = true;
  if (!image->parse(error)) return nullptr;
  return image;
}

std::unique_ptr<ElfImage> ElfImage::from_bytes(std::string bytes, std::string* error) {
  std::unique_ptr<ElfImage> image(new ElfImage());
  image->path_ = "<memory>";
  image->owned_ = std::move(bytes);
  image->data_ = image->owned_.data();
  image->size_ = image->owned_.size();
  if (!image->parse(error)) return nullptr;
  return image;
}

std::string_view ElfImage::section_bytes(uint32_t index) const {
  if (index >= sections_.size()) return {};
  const Section& s = sections_[index];
  if (s.type == SHT_NOBITS || !in_bounds(bytes(), s.offset, s.size)) return {};
  return bytes().substr(s.offset, s.size);
}

bool ElfImage::parse(std::string* error) {
  const std::string_view b = bytes();
  Elf64_Ehdr eh;
  if (!read_at(b, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    *error = path_ + ": not an ELF file";
    return false;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *error = path_ + ": not a 64-bit little-endian ELF file";
    return false;
  }
  // Program headers: loadable segments, the unwind table's segment, notes (build id).
  if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 4096) {
    for (uint32_t i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      if (!read_at(b, eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), &ph)) break;
      ElfSegment seg{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags};
      if (ph.p_type == PT_LOAD) loads_.push_back(seg);
      if (ph.p_type == PT_GNU_EH_FRAME) eh_frame_hdr_ = seg;
      if (ph.p_type == PT_NOTE && build_id_.empty() && in_bounds(b, ph.p_offset, ph.p_filesz)) {
        std::string_view notes = b.substr(ph.p_offset, ph.p_filesz);
        for (uint64_t pos = 0; pos + sizeof(Elf64_Nhdr) <= notes.size();) {
          Elf64_Nhdr nh;
          read_at(notes, pos, &nh);
          uint64_t name_at = pos + sizeof(nh);
          uint64_t desc_at = name_at + align4(nh.n_namesz);
          uint64_t next = desc_at + align4(nh.n_descsz);
          if (!in_bounds(notes, name_at, align4(nh.n_namesz)) || !in_bounds(notes, desc_at, nh.n_descsz)) break;
          if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && notes.substr(name_at, 4) == std::string_view("GNU\0", 4) &&
              nh.n_descsz > 0 && nh.n_descsz <= 64)
            build_id_.assign(notes.data() + desc_at, nh.n_descsz);
          pos = next;
        }
      }
    }
  }
  // Section headers: symbol tables, .gnu_debuglink (a stripped file may have none: that is fine).
  if (eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shnum > 0 && eh.e_shnum < 65280) {
    for (uint32_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      if (!read_at(b, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sh)) {
        sections_.clear();
        break;
      }
      sections_.push_back({sh.sh_type, sh.sh_offset, sh.sh_size, sh.sh_link, sh.sh_entsize, sh.sh_addr, {}});
    }
    std::string_view names = eh.e_shstrndx < sections_.size() ? section_bytes(eh.e_shstrndx) : std::string_view();
    for (uint32_t i = 0; i < sections_.size(); ++i) {
      Elf64_Shdr sh;
      read_at(b, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sh);
      if (sh.sh_name < names.size()) {
        std::string_view rest = names.substr(sh.sh_name);
        sections_[i].name = rest.substr(0, rest.find('\0'));
      }
      if (sections_[i].type == SHT_SYMTAB && !section_bytes(i).empty()) has_symtab_ = true;
      if (sections_[i].name == ".gnu_debuglink") {
        std::string_view link = section_bytes(i);
        size_t nul = link.find('\0');
        if (nul != std::string_view::npos && nul > 0) {
          uint64_t crc_at = align4(nul + 1);
          uint32_t crc = 0;
          if (read_at(link, crc_at, &crc)) {
            debuglink_.assign(link.data(), nul);
            debuglink_crc_ = crc;
          }
        }
      }
    }
  }
  if (loads_.empty() && sections_.empty()) {
    *error = path_ + ": ELF file with neither segments nor sections";
    return false;
  }
  return true;
}

std::optional<uint64_t> ElfImage::file_offset_to_vaddr(uint64_t offset) const {
  for (const ElfSegment& s : loads_)
    if (offset >= s.offset && offset - s.offset < s.filesz) return s.vaddr + (offset - s.offset);
  return std::nullopt;
}

std::optional<uint64_t> ElfImage::vaddr_to_file_offset(uint64_t vaddr) const {
  for (const ElfSegment& s : loads_)
    if (vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz) return s.offset + (vaddr - s.vaddr);
  return std::nullopt;
}

void ElfImage::read_symbols(uint32_t index, std::vector<ElfSymbol>* out, bool functions_only) const {
  std::string_view table = section_bytes(index);
  if (table.empty()) return;
  std::string_view names = section_bytes(sections_[index].link);
  const uint64_t count = table.size() / sizeof(Elf64_Sym);
  for (uint64_t k = 0; k < count; ++k) {
    Elf64_Sym sym;
    read_at(table, k * sizeof(Elf64_Sym), &sym);
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    const bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
    if ((functions_only ? !function : (!function && type != STT_OBJECT)) || sym.st_value == 0 ||
        sym.st_shndx == SHN_UNDEF)
      continue;
    if (sym.st_name >= names.size()) continue;
    std::string_view rest = names.substr(sym.st_name);
    size_t nul = rest.find('\0');
    if (nul == std::string_view::npos || nul == 0) continue;
    out->push_back({sym.st_value, sym.st_size, rest.substr(0, nul)});
  }
}

std::vector<ElfSymbol> ElfImage::function_symbols() const {
  std::vector<ElfSymbol> out;
  for (uint32_t i = 0; i < sections_.size(); ++i)
    if (sections_[i].type == SHT_SYMTAB || sections_[i].type == SHT_DYNSYM) read_symbols(i, &out);
  std::sort(out.begin(), out.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    if (a.address != b.address) return a.address < b.address;
    if (a.size != b.size) return a.size > b.size;
    return a.name < b.name;
  });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ElfSymbol& a, const ElfSymbol& b) { return a.address == b.address && a.name == b.name; }),
            out.end());
  return out;
}

std::optional<ElfSymbol> ElfImage::find_function(std::string_view name) const {
  std::vector<ElfSymbol> found;
  for (uint32_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].type != SHT_SYMTAB && sections_[i].type != SHT_DYNSYM) continue;
    found.clear();
    read_symbols(i, &found);
    for (const ElfSymbol& s : found)
      if (s.name == name) return s;
  }
  return std::nullopt;
}

std::optional<ElfSymbol> ElfImage::find_symbol(std::string_view name) const {
  std::vector<ElfSymbol> found;
  for (uint32_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].type != SHT_SYMTAB && sections_[i].type != SHT_DYNSYM) continue;
    found.clear();
    read_symbols(i, &found, false);
    for (const ElfSymbol& s : found)
      if (s.name == name) return s;
  }
  return std::nullopt;
}

const FunctionRanges& ElfImage::function_ranges() const {
  std::call_once(ranges_once_, [this] {
    // The PT_GNU_EH_FRAME segment is .eh_frame_hdr; a file without program headers may still
    // name the section.
    std::optional<EhFrameHdrLocation> hdr;
    if (eh_frame_hdr_)
      hdr = EhFrameHdrLocation{eh_frame_hdr_->offset, eh_frame_hdr_->filesz, eh_frame_hdr_->vaddr};
    for (const Section& s : sections_) {
      if (s.name != ".eh_frame_hdr" && s.name != ".eh_frame") continue;
      if (s.type == SHT_NOBITS) {
        // A separate debug file keeps the headers but not the contents: reading the segment's
        // offset there would read whatever lies at it.
        ranges_.error = path_ + ": " + std::string(s.name) + " has no contents (a debug file?)";
        return;
      }
      if (!hdr && s.name == ".eh_frame_hdr") hdr = EhFrameHdrLocation{s.offset, s.size, s.addr};
    }
    if (!hdr) {
      ranges_.error = path_ + ": no .eh_frame_hdr";
      return;
    }
    ranges_ = read_function_ranges(bytes(), *hdr, loads_);
    if (!ranges_.error.empty()) ranges_.error = path_ + ": " + ranges_.error;
  });
  return ranges_;
}

}  // namespace strata::symbolize
