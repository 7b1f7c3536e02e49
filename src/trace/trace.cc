#include "trace/trace.h"

#include <algorithm>
#include <cstdio>

#include "core/vector_growth.h"
#include "trace/span_tree.h"

namespace strata::trace {

uint16_t Trace::add_process(Process process) {
  processes.push_back(std::move(process));
  return static_cast<uint16_t>(processes.size() - 1);
}

size_t Trace::add_span(const SpanRecord& span, std::span<const AttrRecord> attributes) {
  // A record holds at most 65,535 attributes; callers cap (and count) before (the importer does).
  attributes = attributes.first(std::min<size_t>(attributes.size(), UINT16_MAX));
  spans.push_back(span);
  spans.back().attr_count = static_cast<uint16_t>(attributes.size());
  attr_begin.back() = static_cast<uint32_t>(attrs.size());
  attrs.insert(attrs.end(), attributes.begin(), attributes.end());
  attr_begin.push_back(static_cast<uint32_t>(attrs.size()));
  structure_.reset();
  return spans.size() - 1;
}

AttrRecord Trace::int_attr(std::string_view key, int64_t value) {
  AttrRecord a;
  a.key = strings.intern(key);
  a.type = static_cast<uint8_t>(AttrType::kInt);
  a.value.i = value;
  return a;
}

AttrRecord Trace::double_attr(std::string_view key, double value) {
  AttrRecord a;
  a.key = strings.intern(key);
  a.type = static_cast<uint8_t>(AttrType::kDouble);
  a.value.d = value;
  return a;
}

AttrRecord Trace::string_attr(std::string_view key, std::string_view value) {
  AttrRecord a;
  a.key = strings.intern(key);
  a.type = static_cast<uint8_t>(AttrType::kString);
  a.value.u = strings.intern(value);
  return a;
}

AttrRecord Trace::metric(std::string_view key, double value) {
  AttrRecord a = double_attr(key, value);
  a.type = static_cast<uint8_t>(AttrType::kMetric);
  return a;
}

std::optional<AttrRecord> Trace::find_attr(size_t span_index, std::string_view key) const {
  uint32_t id = strings.find(key);
  if (id == UINT32_MAX) return std::nullopt;
  for (const AttrRecord& a : attributes(span_index))
    if (a.key == id) return a;
  return std::nullopt;
}

std::string Trace::attr_value_string(const AttrRecord& attr) const {
  switch (static_cast<AttrType>(attr.type)) {
    case AttrType::kInt:
      return std::to_string(attr.value.i);
    case AttrType::kDouble:
    case AttrType::kMetric: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", attr.value.d);
      return buf;
    }
    case AttrType::kString:
      return std::string(strings.get(static_cast<uint32_t>(attr.value.u)));
  }
  return "?";
}

uint64_t Trace::stat(stats::Stat s) const {
  uint64_t total = stats.get(s);
  for (const Process& p : processes) total += p.stats.get(s);
  return total;
}

uint64_t Trace::total_drops() const {
  uint64_t total = 0;
  for (const Process& p : processes) {
    for (const auto& [s, count] : p.stats.nonzero())
      if (stats::info(s).disk == stats::Disk::kStats && !stats::keeps_event(s)) total += count;
    for (const auto& [key, count] : p.stats.unregistered()) total += count;
  }
  return total;
}

const TraceStructure& Trace::structure() const {
  if (structure_ == nullptr || structure_->tracks.span_count() != spans.size())
    structure_ = build_structure(*this);
  return *structure_;
}

const TrackTable& Trace::tracks() const { return structure().tracks; }
const SpanTree& Trace::tree() const { return structure().tree; }
bool Trace::has_structure() const {
  return structure_ != nullptr && structure_->tracks.span_count() == spans.size();
}

void Trace::reserve(size_t span_count, size_t attr_count) {
  // Geometric: callers that append run after run reserve the sum each time.
  if (span_count > spans.size()) reserve_more(spans, span_count - spans.size());
  if (span_count + 1 > attr_begin.size()) reserve_more(attr_begin, span_count + 1 - attr_begin.size());
  if (attr_count > attrs.size()) reserve_more(attrs, attr_count - attrs.size());
}

}  // namespace strata::trace
