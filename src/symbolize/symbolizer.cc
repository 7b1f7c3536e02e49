#include "symbolize/symbolizer.h"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace strata::symbolize {

struct Symbolizer::Module {
  ModuleInfo info;
  std::unique_ptr<ElfImage> image;  // the module itself (segments: file offset -> vaddr)
  std::unique_ptr<ElfImage> debug;  // its separate debug file, when found
  std::vector<ElfSymbol> symbols;   // names point into image or debug
  std::map<uint64_t, std::string> demangled;  // by symbol address
};

std::string demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string mangled(name);
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (out == nullptr || status != 0) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

Symbolizer::Symbolizer(SymbolizerOptions options) : options_(std::move(options)) {}
Symbolizer::~Symbolizer() = default;

std::string Symbolizer::module_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

namespace {
std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}
bool readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }
}  // namespace

std::unique_ptr<ElfImage> Symbolizer::find_debug_file(const ElfImage* image, std::string_view build_id,
                                                      const std::string& path) {
  std::string error;
  // By build id: the recorded one (the binary on disk may be gone) or the file's own.
  std::string id(build_id);
  if (id.empty() && image != nullptr) id = image->build_id();
  if (id.size() >= 2) {
    const std::string hex = hex_bytes(id);
    for (const std::string& dir : options_.debug_dirs) {
      std::string candidate = options_.root + dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
      if (!readable(candidate)) continue;
      auto debug = ElfImage::open(candidate, &error);
      if (debug && (debug->build_id().empty() || debug->build_id() == id) && debug->has_symtab()) return debug;
    }
  }
  // By .gnu_debuglink, checked against the CRC it carries.
  if (image != nullptr && !image->debuglink().empty() && image->debuglink().find('/') == std::string::npos) {
    const std::string dir = dir_of(path);
    std::vector<std::string> candidates = {dir + "/" + image->debuglink(), dir + "/.debug/" + image->debuglink()};
    for (const std::string& d : options_.debug_dirs) candidates.push_back(options_.root + d + dir + "/" + image->debuglink());
    for (const std::string& candidate : candidates) {
      if (candidate == path || !readable(candidate)) continue;
      auto debug = ElfImage::open(candidate, &error);
      if (debug && debuglink_crc32(debug->bytes()) == image->debuglink_crc() && debug->has_symtab()) return debug;
    }
  }
  return nullptr;
}

Symbolizer::Module& Symbolizer::module(const std::string& path, std::string_view build_id) {
  auto key = std::make_pair(path, std::string(build_id));
  auto it = modules_.find(key);
  if (it != modules_.end()) return *it->second;
  auto m = std::make_unique<Module>();
  m->info.path = path;
  m->info.build_id = hex_bytes(build_id);
  std::string error;
  if (!path.empty() && path[0] == '/') m->image = ElfImage::open(options_.root + path, &error);
  else error = path + ": not a file";
  if (m->image && !build_id.empty() && !m->image->build_id().empty() && m->image->build_id() != build_id) {
    // Rebuilt or upgraded since the recording: its offsets mean something else now.
    error = path + ": build id " + hex_bytes(m->image->build_id()) + " differs from the recorded " +
            hex_bytes(build_id) + " (the file changed since recording)";
    m->image.reset();
  }
  m->debug = find_debug_file(m->image.get(), build_id, path);
  if (m->debug) {
    m->symbols = m->debug->function_symbols();
    m->info.symbols_from = m->debug->path();
  }
  if (m->image) {
    // The module's own .dynsym (and .symtab when not stripped) complete the debug file's.
    std::vector<ElfSymbol> own = m->image->function_symbols();
    if (m->symbols.empty()) {
      m->symbols = std::move(own);
      m->info.symbols_from = path;
    } else {
      m->symbols.insert(m->symbols.end(), own.begin(), own.end());
      std::sort(m->symbols.begin(), m->symbols.end(),
                [](const ElfSymbol& a, const ElfSymbol& b) { return a.address < b.address || (a.address == b.address && a.size > b.size); });
    }
  }
  m->info.symbol_count = m->symbols.size();
  if (m->symbols.empty()) m->info.problem = error.empty() ? path + ": no symbols (stripped, no debug file found)" : error;
  Module& ref = *m;
  modules_.emplace(std::move(key), std::move(m));
  return ref;
}

// The closest symbol at or below the address that covers it (a sized symbol must contain it). A
// symbol without a size covers what follows it only up to the next function the unwind tables know:
// past that start it is a label in another function, not that function's name.
bool Symbolizer::symbol_at(Module& m, uint64_t vaddr, const FunctionRange* fde, Symbol* out) {
  auto it = std::upper_bound(m.symbols.begin(), m.symbols.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.address; });
  for (int steps = 0; it != m.symbols.begin() && steps < 64; ++steps) {
    --it;
    const bool covers =
        it->size == 0 ? fde == nullptr || it->address >= fde->start : vaddr - it->address < it->size;
    if (covers) {
      auto [name, inserted] = m.demangled.try_emplace(it->address);
      if (inserted) name->second = options_.demangle ? demangle(it->name) : std::string(it->name);
      out->function = name->second;
      out->function_offset = vaddr - it->address;
      out->function_address = it->address;
      out->known = true;
      return true;
    }
    if (vaddr - it->address > (uint64_t{1} << 24)) break;  // far below: nothing covers it
  }
  return false;
}

Symbol Symbolizer::lookup(const std::string& path, std::string_view build_id, uint64_t file_offset) {
  Module& m = module(path, build_id);
  Symbol out;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(file_offset));
  out.function = module_name(path) + buf;
  // Segments come from the module (or, when it is gone, from its debug file: same addresses).
  const ElfImage* layout = m.image ? m.image.get() : m.debug.get();
  if (layout == nullptr) return out;
  auto vaddr = layout->file_offset_to_vaddr(file_offset);
  if (!vaddr) return out;
  // The unwind tables come from the module itself: a debug file's .eh_frame has no contents.
  const FunctionRange* fde =
      m.image ? find_function_range(m.image->function_ranges().ranges, *vaddr) : nullptr;
  if (symbol_at(m, *vaddr, fde, &out) || fde == nullptr) return out;
  auto start = layout->vaddr_to_file_offset(fde->start);
  if (!start) return out;
  std::snprintf(buf, sizeof(buf), "+0x%llx", static_cast<unsigned long long>(*start));
  out.function = module_name(path) + buf;
  out.function_offset = *vaddr - fde->start;
  out.function_address = fde->start;
  out.from_unwind_table = true;
  return out;
}

std::vector<ModuleInfo> Symbolizer::modules() const {
  std::vector<ModuleInfo> out;
  for (const auto& [key, m] : modules_) out.push_back(m->info);
  return out;
}

}  // namespace strata::symbolize
