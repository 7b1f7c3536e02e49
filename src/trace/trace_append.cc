#include "trace/trace_append.h"

#include <utility>
#include <vector>

namespace strata::trace {

bool can_append(const Trace& part) {
  const SampleData& s = part.samples;
  return s.empty() && s.config.empty() && s.mappings.size() <= 1 && s.frames.size() <= 1 &&
         s.stack_frames.empty() && s.stack_begin.size() <= 2 && s.undefined_references == 0 &&
         s.chunks_skipped == 0;
}

void append_trace(Trace&& part, const TraceBuilder& part_builder, bool positional_stream_ids, Trace* into,
                  TraceBuilder* into_builder) {
  // Strings in the part's id order: the order the reader first interned them, which is the order a
  // serial read adds the ones `into` does not hold yet.
  std::vector<uint32_t> string_id(part.strings.size());
  for (size_t id = 0; id < part.strings.size(); ++id)
    string_id[id] = into->strings.intern(part.strings.get(static_cast<uint32_t>(id)));

  // An id the part's pool never handed out (damaged input the reader let through) stays as it is.
  auto remap = [&](uint64_t id) { return id < string_id.size() ? string_id[id] : id; };

  const size_t process_base = into->processes.size();
  for (size_t p = 0; p < part.processes.size(); ++p) {
    Process& process = part.processes[p];
    constexpr uint64_t kTagMask = uint64_t{0xFF} << 56;
    if (positional_stream_ids && (process.stream_id & ~kTagMask) == p + 1)
      process.stream_id = (process.stream_id & kTagMask) | (process_base + p + 1);
    into->processes.push_back(std::move(process));
  }
  for (uint16_t p : part_builder.numbered())
    into_builder->number_spans_of(static_cast<uint16_t>(p + process_base));

  const size_t attr_base = into->attrs.size();
  for (AttrRecord a : part.attrs) {
    a.key = static_cast<uint32_t>(remap(a.key));
    if (a.type == static_cast<uint8_t>(AttrType::kString)) a.value.u = remap(a.value.u);
    into->attrs.push_back(a);
  }
  // attr_begin holds one offset per span plus the end of attrs: the part's end replaces ours.
  into->attr_begin.pop_back();
  for (size_t i = 0; i < part.spans.size(); ++i) {
    SpanRecord s = part.spans[i];
    s.name = static_cast<uint32_t>(remap(s.name));
    s.process = static_cast<uint16_t>(s.process + process_base);
    into->spans.push_back(s);
    into->attr_begin.push_back(static_cast<uint32_t>(attr_base + part.attr_begin[i]));
  }
  into->attr_begin.push_back(static_cast<uint32_t>(into->attrs.size()));

  for (const auto& [key, value] : part.record.entries()) into->record.set(key, value);
  into->stats.merge(part.stats);
  for (std::string& w : part.warnings) into_builder->warn(std::move(w));
  into->invalidate_structure();
  part = Trace();
}

}  // namespace strata::trace
