#include "annotate/trace_function.h"

#include <map>
#include <tuple>

#include "symbolize/elf_image.h"

namespace strata::annotate {
namespace {

bool name_matches(std::string_view symbol, std::string_view name) {
  if (symbol == name) return true;
  // "ns::f(int) const" matches "ns::f".
  return symbol.size() > name.size() && symbol.substr(0, name.size()) == name && symbol[name.size()] == '(';
}

// One function of one module (a name may be in several: a static function, two libraries).
struct Candidate {
  std::string path, build_id, function;
  uint64_t address = 0;
  uint64_t samples = 0;                                 // time event
  std::map<uint64_t, std::vector<uint64_t>> by_offset;  // file offset -> per event
};

// The size of the function symbol at `address` (0 when none is sized).
uint64_t sized_symbol(const symbolize::ElfImage& image, uint64_t address) {
  uint64_t size = 0;
  for (const symbolize::ElfSymbol& s : image.function_symbols())
    if (s.address == address) size = std::max(size, s.size);
  return size;
}

// Reads the function's bytes (address .. address+size, one PT_LOAD segment) from the mapped file.
bool read_code(const Candidate& c, FunctionSamples* out, std::string* error) {
  std::string why;
  auto image = symbolize::ElfImage::open(c.path, &why);
  if (!image) {
    *error = c.function + ": cannot read its code: " + why;
    return false;
  }
  if (!c.build_id.empty() && !image->build_id().empty() && image->build_id() != c.build_id) {
    *error = c.path + " changed since recording (build id " + symbolize::hex_bytes(image->build_id()) +
             ", recorded " + symbolize::hex_bytes(c.build_id) +
             "): its instructions are not the sampled ones";
    return false;
  }
  uint64_t size = sized_symbol(*image, c.address);
  if (size == 0 && !image->build_id().empty()) {
    // A stripped module (libc, ld.so): the sizes are in its separate debug file, found by build id
    // (the code bytes still come from the module itself).
    const std::string id = symbolize::hex_bytes(image->build_id());
    std::string ignored;
    if (auto debug = symbolize::ElfImage::open(
            "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug", &ignored))
      size = sized_symbol(*debug, c.address);
  }
  const auto first = image->vaddr_to_file_offset(c.address);
  const auto last = size ? image->vaddr_to_file_offset(c.address + size - 1) : std::nullopt;
  if (!first || !last || *last - *first != size - 1) {
    *error =
        c.function + " in " + c.path +
        ": no sized symbol in the file or its debug file by build id (a stripped module without its debug "
        "package): its bytes cannot be delimited";
    return false;
  }
  out->bytes = std::string(image->bytes().substr(*first, size));
  for (const auto& [offset, counts] : c.by_offset)
    if (auto vaddr = image->file_offset_to_vaddr(offset)) out->samples[*vaddr] = counts;
  return true;
}

}  // namespace

bool find_function_samples(const trace::Trace& trace, std::string_view name,
                           symbolize::Symbolizer& symbolizer, FunctionSamples* out, std::string* error) {
  const trace::SampleData& data = trace.samples;
  std::map<std::tuple<std::string, std::string, uint64_t>, Candidate> candidates;
  std::map<uint32_t, std::optional<std::tuple<std::string, std::string, uint64_t>>>
      frame_key;                                        // per leaf frame
  std::map<uint16_t, std::vector<size_t>> event_slots;  // per process: its event -> index in out->events
  uint64_t undeclared = 0;
  for (const trace::SampleCount& c : data.counts) {
    const auto stack = data.stack(c.stack);
    if (stack.empty()) continue;
    const trace::SampleFrame& leaf = data.frame(stack[0]);
    if (leaf.kind != format::SampleFrameKind::kNative) continue;
    auto [it, inserted] = frame_key.try_emplace(stack[0]);
    const trace::SampleMapping& m = data.mapping(leaf.mapping);
    const std::string path(trace.strings.get(m.path));
    if (inserted && !(m.flags & format::kMappingAnonymous) && path != "//anon") {
      symbolize::Symbol s = symbolizer.lookup(path, m.build_id, leaf.offset);
      if (s.known && name_matches(s.function, name)) {
        it->second = std::make_tuple(path, m.build_id, s.function_address);
        Candidate& cand = candidates[*it->second];
        cand.path = path;
        cand.build_id = m.build_id;
        cand.function = s.function;
        cand.address = s.function_address;
      }
    }
    if (!it->second) continue;
    // Events are per process; the annotation's list is the union, by name, the first process's
    // event 0 (CPU time) first.
    auto [slots, fresh] = event_slots.try_emplace(c.process);
    if (fresh) {
      std::vector<std::string> names = data.events(c.process);
      for (size_t e = 0; e < names.size(); ++e) {
        size_t index = 0;
        while (index < out->events.size() && out->events[index] != names[e]) ++index;
        // CPU time under another process's name is still the same event.
        if (e == 0 && !out->events.empty()) index = 0;
        if (index == out->events.size()) out->events.push_back(names[e]);
        slots->second.push_back(index);
      }
    }
    if (c.event >= slots->second.size()) {  // an event the process did not declare: noted, not counted
      undeclared += c.count;
      continue;
    }
    const size_t index = slots->second[c.event];
    Candidate& cand = candidates[*it->second];
    std::vector<uint64_t>& counts = cand.by_offset[leaf.offset];
    if (counts.size() <= index) counts.resize(index + 1, 0);
    counts[index] += c.count;
    if (c.event == 0) cand.samples += c.count;
  }
  if (candidates.empty()) {
    *error = "no sample's leaf is in a function named '" + std::string(name) +
             "' (the sampled functions: strata profile TRACE; record with --sample)";
    return false;
  }
  if (undeclared > 0)
    out->notes.push_back(std::to_string(undeclared) +
                         " samples of events their process's SampleConfig does not name were left out");
  const Candidate* best = nullptr;
  for (const auto& [key, cand] : candidates)
    if (best == nullptr || cand.samples > best->samples) best = &cand;
  for (const auto& [key, cand] : candidates)
    if (&cand != best)
      out->notes.push_back("also sampled: " + cand.function + " in " + cand.path + " (" +
                           std::to_string(cand.samples) + " samples, not shown)");
  out->function = best->function;
  out->module_path = best->path;
  out->address = best->address;
  return read_code(*best, out, error);
}

}  // namespace strata::annotate
