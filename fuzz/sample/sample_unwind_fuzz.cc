// Fuzzes the unwinder's input: a sample's registers and stack copy, as perf_event or the fallback's
// signal handler deliver them (from another process, so nothing in them can be trusted). The
// instruction and stack pointers are steered into this process's real code and into the copy, so
// the CFI interpreter and the frame-pointer walk run on real unwind tables with hostile stacks.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sample/mappings.h"
#include "sample/sample_types.h"
#include "sample/unwinder.h"

using namespace strata::sample;

namespace {
struct Range {
  uint64_t start, end;
};
std::vector<Range> executable_ranges() {
  std::vector<Range> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    if (perms.size() < 3 || perms[2] != 'x') continue;
    const size_t dash = range.find('-');
    out.push_back({std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16)});
  }
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MappingTable* table = [] {
    auto* t = new MappingTable(getpid(), "");
    std::string error;
    t->load_proc_maps(&error);
    return t;
  }();
  static Unwinder* unwinder = new Unwinder(table);
  static const std::vector<Range> code = executable_ranges();
  if (size < 8 * kPerfRegCount + 4 || code.empty()) return 0;
  RawSample s;
  s.has_regs = true;
  std::memcpy(s.regs, data, 8 * kPerfRegCount);
  data += 8 * kPerfRegCount;
  size -= 8 * kPerfRegCount;
  uint32_t steer;
  std::memcpy(&steer, data, 4);
  data += 4;
  size -= 4;
  // Steer IP into real code (most of the time) and SP/BP near the copy's base.
  const uint64_t stack_base = 0x7ffd00000000ull;
  if (steer & 1) {
    const Range& r = code[(steer >> 1) % code.size()];
    s.regs[kRegIp] = r.start + s.regs[kRegIp] % (r.end - r.start);
  }
  if (steer & 0x100) s.regs[kRegSp] = stack_base;
  if (steer & 0x200) s.regs[kRegBp] = stack_base + (s.regs[kRegBp] % (size + 64));
  std::vector<uint8_t> stack(data, data + size);
  s.stack = stack.data();
  s.stack_size = static_cast<uint32_t>(stack.size());
  uint64_t ips[kMaxNativeFrames];
  uint32_t n = 0;
  unwinder->unwind_dwarf(s, ips, kMaxNativeFrames, &n);
  if (n > kMaxNativeFrames) __builtin_trap();
  n = 0;
  unwinder->unwind_frame_pointers(s, ips, kMaxNativeFrames, &n);
  if (n > kMaxNativeFrames) __builtin_trap();
  return 0;
}
