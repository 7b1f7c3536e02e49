#include "format/sample_payloads.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace strata::format {
namespace {

template <typename T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Bounds-checked reading of a payload: every get fails (and stays failed) past the end.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  template <typename T>
  bool get(T* v) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(size_t n, std::string* out) {
    if (data_.size() - pos_ < n) return false;
    out->assign(data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      result |= uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes: not a varint we wrote
  }
  size_t left() const { return data_.size() - pos_; }
  size_t pos() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

bool fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

// A count read from the payload must fit in what is left (each entry needs `min_bytes`): a larger
// count is corruption, not an allocation request.
bool check_count(const char* what, uint32_t count, size_t min_bytes, const Cursor& c, std::string* error) {
  if (min_bytes > 0 && count > c.left() / min_bytes)
    return fail(error, std::string(what) + " chunk claims " + std::to_string(count) + " entries, more than fit in " +
                           std::to_string(c.left()) + " bytes");
  return true;
}

}  // namespace

void encode_sample_mappings(const std::vector<SampleMapping>& mappings, std::string* out) {
  put<uint32_t>(out, static_cast<uint32_t>(mappings.size()));
  for (const SampleMapping& m : mappings) {
    put<uint32_t>(out, m.id);
    put<uint32_t>(out, m.path);
    put<uint64_t>(out, m.start);
    put<uint64_t>(out, m.end);
    put<uint64_t>(out, m.file_offset);
    put<int64_t>(out, m.time_ns);
    put<uint8_t>(out, m.flags);
    const size_t n = std::min<size_t>(m.build_id.size(), 64);
    put<uint8_t>(out, static_cast<uint8_t>(n));
    put<uint16_t>(out, 0);
    out->append(m.build_id.data(), n);
  }
}

bool decode_sample_mappings(std::string_view payload, std::vector<SampleMapping>* out, std::string* error) {
  Cursor c(payload);
  uint32_t count = 0;
  if (!c.get(&count)) return fail(error, "sample mappings chunk shorter than its count");
  if (!check_count("sample mappings", count, 44, c, error)) return false;
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    SampleMapping m;
    uint8_t id_len = 0;
    uint16_t reserved = 0;
    if (!c.get(&m.id) || !c.get(&m.path) || !c.get(&m.start) || !c.get(&m.end) || !c.get(&m.file_offset) ||
        !c.get(&m.time_ns) || !c.get(&m.flags) || !c.get(&id_len) || !c.get(&reserved) ||
        !c.bytes(id_len, &m.build_id))
      return fail(error, "sample mapping " + std::to_string(i) + " cut short at byte " + std::to_string(c.pos()));
    if (id_len > 64) return fail(error, "sample mapping " + std::to_string(m.id) + ": build id longer than 64 bytes");
    if (m.end < m.start)
      return fail(error, "sample mapping " + std::to_string(m.id) + ": end before start");
    out->push_back(std::move(m));
  }
  return true;
}

void encode_sample_frames(const std::vector<SampleFrame>& frames, std::string* out) {
  put<uint32_t>(out, static_cast<uint32_t>(frames.size()));
  for (const SampleFrame& f : frames) {
    put<uint32_t>(out, f.id);
    put<uint8_t>(out, static_cast<uint8_t>(f.kind));
    put<uint8_t>(out, 0);
    put<uint16_t>(out, 0);
    put<uint32_t>(out, f.kind == SampleFrameKind::kPython ? f.function : f.mapping);
    put<uint32_t>(out, f.kind == SampleFrameKind::kPython ? f.file : f.function);
    put<uint64_t>(out, f.kind == SampleFrameKind::kPython ? uint64_t{f.line} : f.offset);
    put<uint64_t>(out, 0);  // reserved (column, inlining depth)
  }
}

bool decode_sample_frames(std::string_view payload, std::vector<SampleFrame>* out, std::string* error) {
  Cursor c(payload);
  uint32_t count = 0;
  if (!c.get(&count)) return fail(error, "sample frames chunk shorter than its count");
  if (!check_count("sample frames", count, kSampleFrameBytes, c, error)) return false;
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    SampleFrame f;
    uint8_t kind = 0, pad8 = 0;
    uint16_t pad16 = 0;
    uint32_t a = 0, b = 0;
    uint64_t v = 0, reserved = 0;
    if (!c.get(&f.id) || !c.get(&kind) || !c.get(&pad8) || !c.get(&pad16) || !c.get(&a) || !c.get(&b) || !c.get(&v) ||
        !c.get(&reserved))
      return fail(error, "sample frame " + std::to_string(i) + " cut short");
    if (kind < 1 || kind > 5)
      return fail(error, "sample frame " + std::to_string(f.id) + ": unknown kind " + std::to_string(kind));
    f.kind = static_cast<SampleFrameKind>(kind);
    if (f.kind == SampleFrameKind::kPython) {
      f.function = a;
      f.file = b;
      f.line = static_cast<uint32_t>(v);
    } else {
      f.mapping = a;
      f.function = b;  // kNative in generated code: its name from the perf map (0: none)
      f.offset = v;
    }
    out->push_back(f);
  }
  return true;
}

void encode_sample_stacks(const std::vector<SampleStack>& stacks, std::string* out) {
  put<uint32_t>(out, static_cast<uint32_t>(stacks.size()));
  for (const SampleStack& s : stacks) {
    put<uint32_t>(out, s.id);
    put<uint32_t>(out, static_cast<uint32_t>(s.frames.size()));
    out->append(reinterpret_cast<const char*>(s.frames.data()), s.frames.size() * sizeof(uint32_t));
  }
}

bool decode_sample_stacks(std::string_view payload, std::vector<SampleStack>* out, std::string* error) {
  Cursor c(payload);
  uint32_t count = 0;
  if (!c.get(&count)) return fail(error, "sample stacks chunk shorter than its count");
  if (!check_count("sample stacks", count, 8, c, error)) return false;
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    SampleStack s;
    uint32_t depth = 0;
    if (!c.get(&s.id) || !c.get(&depth)) return fail(error, "sample stack " + std::to_string(i) + " cut short");
    if (depth > kMaxSampleStackDepth)
      return fail(error, "sample stack " + std::to_string(s.id) + ": depth " + std::to_string(depth) +
                             " beyond the limit of " + std::to_string(kMaxSampleStackDepth));
    if (c.left() < size_t{depth} * 4)
      return fail(error, "sample stack " + std::to_string(s.id) + ": " + std::to_string(depth) +
                             " frames run past the end of the chunk");
    s.frames.resize(depth);
    for (uint32_t k = 0; k < depth; ++k) c.get(&s.frames[k]);
    out->push_back(std::move(s));
  }
  return true;
}

void encode_sample_counts(const SampleCountsHeader& header, const std::vector<SampleCount>& counts, std::string* out) {
  put<uint32_t>(out, header.epoch);
  put<uint32_t>(out, static_cast<uint32_t>(counts.size()));
  put<int64_t>(out, header.start_ns);
  put<int64_t>(out, header.end_ns);
  for (const SampleCount& e : counts) {
    put<uint32_t>(out, e.tid);
    put<uint32_t>(out, e.stack);
    put<uint64_t>(out, e.span_id);
    put<uint32_t>(out, e.event);
    put<uint32_t>(out, e.count);
  }
}

bool decode_sample_counts(std::string_view payload, SampleCountsHeader* header, std::vector<SampleCount>* out,
                          std::string* error) {
  Cursor c(payload);
  uint32_t count = 0;
  if (!c.get(&header->epoch) || !c.get(&count) || !c.get(&header->start_ns) || !c.get(&header->end_ns))
    return fail(error, "sample counts chunk shorter than its header");
  if (c.left() != size_t{count} * kSampleCountBytes)
    return fail(error, "sample counts chunk holds " + std::to_string(c.left()) + " bytes for " +
                           std::to_string(count) + " entries of " + std::to_string(kSampleCountBytes));
  out->reserve(out->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    SampleCount e;
    c.get(&e.tid);
    c.get(&e.stack);
    c.get(&e.span_id);
    c.get(&e.event);
    c.get(&e.count);
    out->push_back(e);
  }
  return true;
}

void encode_sample_timeline(uint32_t tid, const std::vector<SamplePoint>& points, std::string* out) {
  put<uint32_t>(out, tid);
  put<uint32_t>(out, static_cast<uint32_t>(points.size()));
  put<int64_t>(out, points.empty() ? 0 : points.front().time_ns);
  int64_t last_time = points.empty() ? 0 : points.front().time_ns;
  uint64_t last_span = 0;
  for (const SamplePoint& p : points) {
    put_varint(out, static_cast<uint64_t>(p.time_ns - last_time));
    put_varint(out, p.stack);
    put_varint(out, p.event);
    put_varint(out, p.weight);
    const int64_t delta = static_cast<int64_t>(p.span_id - last_span);
    put_varint(out, (static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63));
    last_time = p.time_ns;
    last_span = p.span_id;
  }
}

bool decode_sample_timeline(std::string_view payload, uint32_t* tid, std::vector<SamplePoint>* out,
                            std::string* error) {
  Cursor c(payload);
  uint32_t count = 0;
  int64_t time = 0;
  if (!c.get(tid) || !c.get(&count) || !c.get(&time)) return fail(error, "sample timeline chunk shorter than its header");
  if (!check_count("sample timeline", count, 5, c, error)) return false;
  out->reserve(out->size() + count);
  uint64_t span = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t dt = 0, stack = 0, event = 0, weight = 0, span_delta = 0;
    if (!c.varint(&dt) || !c.varint(&stack) || !c.varint(&event) || !c.varint(&weight) || !c.varint(&span_delta))
      return fail(error, "sample timeline entry " + std::to_string(i) + " cut short or malformed");
    if (stack > UINT32_MAX || event > UINT32_MAX || weight > UINT32_MAX || dt > (uint64_t{1} << 62))
      return fail(error, "sample timeline entry " + std::to_string(i) + ": a field is out of range");
    if (time > INT64_MAX - static_cast<int64_t>(dt))
      return fail(error, "sample timeline entry " + std::to_string(i) + ": time past the clock's range");
    time += static_cast<int64_t>(dt);
    span += (span_delta >> 1) ^ (~(span_delta & 1) + 1);
    SamplePoint p;
    p.time_ns = time;
    p.stack = static_cast<uint32_t>(stack);
    p.event = static_cast<uint32_t>(event);
    p.weight = static_cast<uint32_t>(weight);
    p.span_id = span;
    out->push_back(p);
  }
  if (c.left() != 0) return fail(error, "sample timeline chunk has " + std::to_string(c.left()) + " bytes after its entries");
  return true;
}

}  // namespace strata::format
