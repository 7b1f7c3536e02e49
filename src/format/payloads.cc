#include "format/payloads.h"

#include <cstring>

namespace strata::format {

void encode_strings(std::span<const std::pair<uint32_t, std::string_view>> entries, std::string* out) {
  uint32_t count = static_cast<uint32_t>(entries.size());
  out->append(reinterpret_cast<const char*>(&count), 4);
  for (const auto& [id, text] : entries) {
    uint32_t len = static_cast<uint32_t>(text.size());
    out->append(reinterpret_cast<const char*>(&id), 4);
    out->append(reinterpret_cast<const char*>(&len), 4);
    out->append(text);
  }
}

bool decode_strings(std::string_view payload, std::vector<StringEntry>* out, std::string* error) {
  if (payload.size() < 4) {
    *error = "strings chunk shorter than its count";
    return false;
  }
  uint32_t count;
  std::memcpy(&count, payload.data(), 4);
  size_t pos = 4;
  // Each entry needs at least 8 bytes: a count larger than that is corruption, not an allocation.
  if (count > (payload.size() - pos) / 8) {
    *error = "strings chunk claims " + std::to_string(count) + " entries, more than fit";
    return false;
  }
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    if (payload.size() - pos < 8) {
      *error = "strings chunk cut short at entry " + std::to_string(i);
      return false;
    }
    uint32_t id, len;
    std::memcpy(&id, payload.data() + pos, 4);
    std::memcpy(&len, payload.data() + pos + 4, 4);
    pos += 8;
    if (payload.size() - pos < len) {
      *error = "string " + std::to_string(id) + " runs past the end of its chunk";
      return false;
    }
    out->push_back({id, payload.substr(pos, len)});
    pos += len;
  }
  return true;
}

void encode_spans(std::span<const SpanRecord> spans, std::span<const AttrRecord> attrs, std::string* out) {
  SpansChunkHeader h{static_cast<uint32_t>(spans.size()), static_cast<uint32_t>(attrs.size())};
  out->reserve(out->size() + sizeof(h) + spans.size_bytes() + attrs.size_bytes());
  out->append(reinterpret_cast<const char*>(&h), sizeof(h));
  out->append(reinterpret_cast<const char*>(spans.data()), spans.size_bytes());
  out->append(reinterpret_cast<const char*>(attrs.data()), attrs.size_bytes());
}

bool decode_spans(std::string_view payload, DecodedSpans* out, std::string* error) {
  if (payload.size() < sizeof(SpansChunkHeader)) {
    *error = "spans chunk shorter than its header";
    return false;
  }
  SpansChunkHeader h;
  std::memcpy(&h, payload.data(), sizeof(h));
  uint64_t need = sizeof(h) + uint64_t{h.span_count} * sizeof(SpanRecord) +
                  uint64_t{h.attr_count} * sizeof(AttrRecord);
  if (need != payload.size()) {
    *error = "spans chunk size " + std::to_string(payload.size()) + " does not match its " +
             std::to_string(h.span_count) + " spans and " + std::to_string(h.attr_count) + " attributes";
    return false;
  }
  out->span_count = h.span_count;
  out->attr_count = h.attr_count;
  out->span_bytes = payload.data() + sizeof(h);
  out->attr_bytes = out->span_bytes + uint64_t{h.span_count} * sizeof(SpanRecord);
  return true;
}

void encode_clock_snapshot(std::span<const ClockReading> readings, std::string* out) {
  out->append(reinterpret_cast<const char*>(readings.data()), readings.size_bytes());
}

bool decode_clock_snapshot(std::string_view payload, std::vector<ClockReading>* out, std::string* error) {
  if (payload.size() % sizeof(ClockReading) != 0) {
    *error = "clock snapshot size is not a multiple of a reading";
    return false;
  }
  out->resize(payload.size() / sizeof(ClockReading));
  // An empty snapshot leaves data() null: memcpy from or to null is undefined even for 0 bytes.
  if (!payload.empty()) std::memcpy(out->data(), payload.data(), payload.size());
  return true;
}

}  // namespace strata::format
