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
  uint64_t size = 0;
  for (const symbolize::ElfSymbol& s : image->function_symbols())
    if (s.address == c.address) size = std::max(size, s.size);
  const auto first = image->vaddr_to_file_offset(c.address);
  const auto last = size ? image->vaddr_to_file_offset(c.address + size - 1) : std::nullopt;
  if (!first || !last || *last - *first != size - 1) {
    *error =
        c.function + " in " + c.path +
        ": no sized symbol in the file's own symbol table (a stripped module): its bytes cannot be delimited";
    return false;
  }
  out->bytes = std::string(image->bytes().substr(*first, size));
  for (const auto& [offset, counts] : c.by_offset)
    if (auto vaddr = image->file_offset_to_vaddr(offset)) out->samples[*vaddr] = counts;
  return true;
}

}  // namespace

bool find_function_samples(const model::Trace& trace, std::string_view name,
                           symbolize::Symbolizer& symbolizer, FunctionSamples* out, std::string* error) {
  const model::SampleData& data = trace.samples;
  std::map<std::tuple<std::string, std::string, uint64_t>, Candidate> candidates;
  std::map<uint32_t, std::optional<std::tuple<std::string, std::string, uint64_t>>>
      frame_key;  // per leaf frame
  std::map<uint16_t, std::vector<std::string>> process_events;
  for (const model::SampleCount& c : data.counts) {
    const auto stack = data.stack(c.stack);
    if (stack.empty()) continue;
    const model::SampleFrame& leaf = data.frame(stack[0]);
    if (leaf.kind != format::SampleFrameKind::kNative) continue;
    auto [it, inserted] = frame_key.try_emplace(stack[0]);
    const model::SampleMapping& m = data.mapping(leaf.mapping);
    const std::string path(trace.strings.get(m.path));
    if (inserted && !(m.flags & format::kMappingAnonymous)) {
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
    // Events are per process; the annotation's list is the union, by name.
    auto [names, fresh] = process_events.try_emplace(c.process);
    if (fresh) names->second = data.events(c.process);
    const std::string event = c.event < names->second.size() ? names->second[c.event] : "samples";
    size_t index = 0;
    while (index < out->events.size() && out->events[index] != event) ++index;
    if (index == out->events.size()) {
      if (c.event == 0 && !out->events.empty()) {
        index = 0;  // CPU time under another process's name: the same event
      } else {
        out->events.push_back(event);
      }
    }
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
