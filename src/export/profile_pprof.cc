#include "export/profile_pprof.h"

#include <zlib.h>

#include <map>
#include <unordered_map>

#include "core/level.h"
#include "core/utf8.h"

namespace strata::exporter {
namespace {

// Protocol buffer wire format, the few pieces profile.proto needs.
void put_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void put_tag(std::string* out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | wire_type);
}
void put_int(std::string* out, int field, uint64_t v) {
  if (v == 0) return;  // proto3: zero is the default, not written
  put_tag(out, field, 0);
  put_varint(out, v);
}
void put_bytes(std::string* out, int field, std::string_view bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out->append(bytes);
}
void put_packed(std::string* out, int field, const std::vector<uint64_t>& values) {
  std::string packed;
  for (uint64_t v : values) put_varint(&packed, v);
  put_bytes(out, field, packed);
}

class Strings {
 public:
  Strings() { index(""); }  // string_table[0] must be ""
  // profile.proto's strings are proto3 `string`s: decoders (pprof's, protoc's) refuse a table with
  // bytes that are not UTF-8, so a name read from a changing process or a symbol table is repaired.
  uint64_t index(const std::string& raw) {
    std::string repaired;
    if (!core::is_valid_utf8(raw)) core::append_valid_utf8(&repaired, raw);
    const std::string& s = repaired.empty() ? raw : repaired;
    auto [it, inserted] = ids_.try_emplace(s, table_.size());
    if (inserted) table_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& table() const { return table_; }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> table_;
};

bool gzip(const std::string& in, std::string* out, std::string* error) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    *error = "zlib: deflateInit2 failed";
    return false;
  }
  out->resize(deflateBound(&z, in.size()) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    *error = "zlib: deflate did not finish";
    return false;
  }
  return true;
}

}  // namespace

std::string format_profile_pprof(const trace::Trace& trace, const profile::ProfileOptions& options,
                                 profile::FrameNamer& namer, std::string* error) {
  const trace::SampleData& data = trace.samples;
  Strings strings;
  std::string body;
  const uint64_t period = data.config.empty() ? 0 : data.period_ns(data.config.begin()->first);
  // sample_type: [samples/count, cpu/nanoseconds]; period_type cpu/nanoseconds.
  for (auto [type, unit] : {std::pair{"samples", "count"}, std::pair{"cpu", "nanoseconds"}}) {
    std::string vt;
    put_int(&vt, 1, strings.index(type));
    put_int(&vt, 2, strings.index(unit));
    put_bytes(&body, 1, vt);
  }
  // (process, span id) -> (level, (name, parent)).
  std::map<std::pair<uint16_t, uint64_t>, std::pair<uint8_t, std::pair<uint32_t, uint64_t>>> all_spans;
  for (const SpanRecord& s : trace.spans)
    all_spans[{s.process, s.span_id}] = {s.level, {s.name, s.parent_id}};
  std::unordered_map<std::string, uint64_t> function_ids;
  std::string functions, locations;
  std::unordered_map<uint32_t, uint64_t> location_ids;  // frame id -> location id
  auto location_of = [&](uint32_t frame) {
    auto [it, inserted] = location_ids.try_emplace(frame, location_ids.size() + 1);
    if (!inserted) return it->second;
    const profile::FrameName& n = namer.name(frame);
    const std::string& key = namer.function_key(frame);
    auto [fit, fnew] = function_ids.try_emplace(key, function_ids.size() + 1);
    if (fnew) {
      std::string f;
      put_int(&f, 1, fit->second);
      put_int(&f, 2, strings.index(key));
      put_int(&f, 3, strings.index(n.function));
      put_int(&f, 4, strings.index(n.python ? n.file : n.module));
      put_bytes(&functions, 5, f);
    }
    std::string line;
    put_int(&line, 1, fit->second);
    put_int(&line, 2, n.line);
    std::string loc;
    put_int(&loc, 1, it->second);
    const trace::SampleFrame& sf = data.frame(frame);
    if (sf.kind != format::SampleFrameKind::kPython) put_int(&loc, 3, sf.offset);
    put_bytes(&loc, 4, line);
    put_bytes(&locations, 4, loc);
    return it->second;
  };
  const uint64_t op_key = strings.index("op"), layer_key = strings.index("layer"),
                 thread_key = strings.index("thread");
  std::vector<uint64_t> ids;
  for (const trace::SampleCount& c : data.counts) {
    if (static_cast<int>(c.event) != options.event || c.count == 0) continue;
    ids.clear();
    for (uint32_t frame : data.stack(c.stack)) ids.push_back(location_of(frame));
    std::string sample;
    put_packed(&sample, 1, ids);
    put_packed(&sample, 2, {c.count, c.count * period});
    std::string innermost, outermost;
    uint64_t id = c.span_id;
    for (int depth = 0; id != 0 && depth < 256; ++depth) {
      auto it = all_spans.find({c.process, id});
      if (it == all_spans.end()) break;
      if (it->second.first == static_cast<uint8_t>(Level::kLayer)) {
        outermost = std::string(trace.strings.get(it->second.second.first));
        if (innermost.empty()) innermost = outermost;
      }
      id = it->second.second.second;
    }
    for (auto [key, value] : {std::pair{op_key, &innermost}, std::pair{layer_key, &outermost}}) {
      if (value->empty()) continue;
      std::string label;
      put_int(&label, 1, key);
      put_int(&label, 2, strings.index(*value));
      put_bytes(&sample, 3, label);
    }
    std::string thread;
    put_int(&thread, 1, thread_key);
    put_int(&thread, 3, c.tid);
    put_bytes(&sample, 3, thread);
    put_bytes(&body, 2, sample);
  }
  body += locations;
  body += functions;
  std::string period_type;  // "cpu" and "nanoseconds" are in the table already (sample_type)
  put_int(&period_type, 1, strings.index("cpu"));
  put_int(&period_type, 2, strings.index("nanoseconds"));
  for (const std::string& s : strings.table()) put_bytes(&body, 6, s);
  put_bytes(&body, 11, period_type);
  put_int(&body, 12, period);
  std::string out;
  if (!gzip(body, &out, error)) return {};
  return out;
}

}  // namespace strata::exporter
