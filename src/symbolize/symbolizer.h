// Late symbolization: (module path, build id, file offset) -> function name, when a trace is read
// (the sampler records only mappings and offsets). Symbols come from the module's own .symtab and
// .dynsym, and from its separate debug file where one is installed: found by build id
// (<debug dir>/.build-id/ab/cdef....debug) or by .gnu_debuglink (next to the module, in its .debug/
// folder, or under <debug dir>/<module's folder>), checked against the link's CRC. A module that is
// gone, changed since recording (another build id), or has no symbol covering the offset gives
// "module+0xOFFSET": the offset of the function's start when the module's unwind tables (.eh_frame)
// place the address in a function, else of the address itself. Shared by `strata profile` and
// (later) `strata annotate`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/elf_image.h"

namespace strata::symbolize {

struct SymbolizerOptions {
  std::vector<std::string> debug_dirs{"/usr/lib/debug"};
  std::string root;  // prefix for module paths (e.g. "/proc/PID/root" for a process in a container)
  bool demangle = true;
};

struct Symbol {
  std::string function;      // demangled name, or "module+0xOFFSET" when unknown
  uint64_t function_offset = 0;  // bytes from the function's start
  uint64_t function_address = 0; // link-time address of the function (0 when unknown)
  bool known = false;
  // No symbol covers the address but an FDE of the module's unwind tables does (a stripped
  // module's internal function): `function` is "module+0xOFFSET" with the offset of the
  // function's start, so every sample of one function groups under one name, and
  // function_offset / function_address are relative to that start.
  bool from_unwind_table = false;
};

// What was found for a module (printed by tools so a user sees why names are missing).
struct ModuleInfo {
  std::string path;
  std::string build_id;     // hex, as recorded
  std::string symbols_from; // the file the symbols came from ("" when none)
  std::string problem;      // why there are no symbols ("" when fine)
  size_t symbol_count = 0;
};

class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();

  // `build_id`: raw bytes as recorded (may be empty). `file_offset`: offset in the module's file.
  Symbol lookup(const std::string& path, std::string_view build_id, uint64_t file_offset);
  // The module's basename, for "module+0x..." display.
  static std::string module_name(std::string_view path);
  std::vector<ModuleInfo> modules() const;

 private:
  struct Module;
  Module& module(const std::string& path, std::string_view build_id);
  bool symbol_at(Module& m, uint64_t vaddr, const FunctionRange* fde, Symbol* out);
  std::unique_ptr<ElfImage> find_debug_file(const ElfImage* image, std::string_view build_id,
                                            const std::string& path);
  SymbolizerOptions options_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Module>> modules_;
};

std::string demangle(std::string_view name);

}  // namespace strata::symbolize
