#include "sample_fuzz_targets.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "format/chunk_reader.h"
#include "format/file_format.h"
#include "sample/mappings.h"
#include "sample/sample_types.h"
#include "sample/unwinder.h"
#include "trace/sample_loader.h"

namespace strata::fuzz {
using namespace sample;

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
    out.push_back(
        {std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16)});
  }
  return out;
}
}  // namespace

void run_sample_chunks(std::string_view bytes) {
  const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  static const format::ChunkType kTypes[] = {
      format::ChunkType::kSampleConfig, format::ChunkType::kSampleMappings,
      format::ChunkType::kSampleFrames, format::ChunkType::kSampleStacks,
      format::ChunkType::kSampleCounts, format::ChunkType::kSampleTimeline};
  trace::SampleData samples;
  trace::SampleChunkLoader loader(&samples);
  size_t pos = 0;
  while (pos + 3 <= size) {
    const uint8_t selector = data[pos];
    uint16_t length;
    std::memcpy(&length, data + pos + 1, 2);
    pos += 3;
    if (length > size - pos) length = static_cast<uint16_t>(size - pos);
    format::Chunk chunk;
    chunk.type = static_cast<uint16_t>(kTypes[(selector & 0x7F) % 6]);
    chunk.stream_id = selector >> 7;  // two streams: ids are local to each
    chunk.payload = std::string_view(reinterpret_cast<const char*>(data + pos), length);
    pos += length;
    std::string error;
    const bool ok = loader.handle(
        chunk, static_cast<uint16_t>(selector >> 7), [](uint32_t id) { return id % 64; }, &error);
    if (!ok && error.empty()) __builtin_trap();  // a skipped chunk always says why
  }
  // Everything the loader kept must be self-consistent: stacks within the frame table.
  for (size_t i = 1; i < samples.stack_count(); ++i)
    for (uint32_t f : samples.stack(static_cast<uint32_t>(i)))
      if (f >= samples.frames.size()) __builtin_trap();
  (void)samples.total();
}

void run_sample_unwind(std::string_view bytes) {
  const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t size = bytes.size();
  static MappingTable* table = [] {
    auto* t = new MappingTable(getpid(), "");
    std::string error;
    t->load_proc_maps(&error);
    return t;
  }();
  static Unwinder* unwinder = new Unwinder(table);
  static const std::vector<Range> code = executable_ranges();
  if (size < 8 * kPerfRegCount + 4 || code.empty()) return;
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
}

}  // namespace strata::fuzz
