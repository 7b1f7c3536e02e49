#include "trace_fuzz_targets.h"

#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <streambuf>

#include "core/crc32c.h"
#include "export/exporters.h"
#include "format/chunk_reader.h"
#include "format/chunk_writer.h"
#include "trace/span_tree.h"
#include "trace/trace_builder.h"
#include "trace/trace_loader.h"
#include "trace/trace_summary.h"

namespace strata::fuzz {
namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Counts the bytes an export writes and throws them away.
class DiscardBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c == EOF ? 0 : c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// Loads `bytes` and summarizes them in a stream; returns whether the loader accepted them.
bool load_and_summarize(std::string_view bytes, trace::Trace* trace, trace::TraceSummary* summary,
                        bool* summarized) {
  std::string error;
  format::ChunkReader reader;
  if (!reader.open(format::memory_source(bytes), "fuzz-input")) {
    check(!reader.error().empty() && reader.error().find('\n') == std::string::npos);
    return false;
  }
  trace::TraceBuilder builder(trace);
  const bool loaded = trace::load_chunks(reader, builder, &error);
  if (loaded) builder.finish();  // as open_trace: one sort, the tracks table and the span tree
  format::ChunkReader again;
  *summarized = again.open(format::memory_source(bytes), "fuzz-input") &&
                trace::summarize_chunks(again, summary, &error);
  return loaded;
}

// What every loaded trace guarantees to the analyses, whatever the file held.
void check_loaded(const trace::Trace& trace) {
  check(trace.attr_begin.size() == trace.spans.size() + 1);
  check(trace.attr_begin.back() == trace.attrs.size());
  for (const SpanRecord& s : trace.spans) {
    check(time_in_range(s.start_ns) && time_in_range(s.end_ns));
    check(s.process < trace.processes.size());
    check(s.name < trace.strings.size());
  }
  for (const AttrRecord& a : trace.attrs) check(a.key < trace.strings.size());
}

// `strata info` streams what `strata analyze` loads: the two must count alike, every stat of what
// reading found (load.*: the tree's counters are the loaded trace's alone, and so are the upgrade's
// of format 1.0 spans, which only loading does; a streamed summary counts those spans instead).
void check_agree(const trace::Trace& trace, const trace::TraceSummary& summary) {
  check(summary.spans == trace.spans.size());
  for (const stats::StatInfo& info : stats::all_stats()) {
    if (info.id == stats::Stat::kLoadActivityUpgraded || info.id == stats::Stat::kLoadLegacyKeysRenamed) {
      check(info.id != stats::Stat::kLoadActivityUpgraded ||
            trace.stats.get(info.id) <= summary.format_1_0_spans);
      continue;
    }
    if (info.scope == stats::Scope::kTrace && info.source != stats::Source::kCorrelation)
      check(summary.stats.get(info.id) == trace.stats.get(info.id));
  }
}

}  // namespace

void run_trace_reader(std::string_view bytes) {
  trace::Trace trace;
  trace::TraceSummary summary;
  bool summarized = false;
  if (!load_and_summarize(bytes, &trace, &summary, &summarized)) return;
  check(summarized);
  check_agree(trace, summary);
  check_loaded(trace);
  check(trace.tree().size() == trace.spans.size());
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    (void)trace.name(trace.spans[i]);
    for (const auto& a : trace.attributes(i)) (void)trace.attr_value_string(a);
  }
}

std::string fix_up_chunks(std::string_view bytes) {
  const format::FileHeader file_header = format::make_file_header();
  std::string out(reinterpret_cast<const char*>(&file_header), sizeof(file_header));
  size_t pos = sizeof(format::FileHeader);
  std::string decompressed, compressed;
  while (pos < bytes.size() && bytes.size() - pos >= sizeof(format::ChunkHeader)) {
    format::ChunkHeader h;
    std::memcpy(&h, bytes.data() + pos, sizeof(h));
    pos += sizeof(h);
    const size_t stored = std::min<size_t>(h.stored_size, bytes.size() - pos);
    std::string_view payload = bytes.substr(pos, stored);
    pos += stored;
    uint32_t raw_size = static_cast<uint32_t>(payload.size());
    if (h.flags & format::kChunkZstd) {
      // Compressed bytes that still decompress are kept (the seeds' zstd chunks); anything else is
      // taken as the payload itself and compressed, so the decoders see the mutation.
      unsigned long long size = ZSTD_getFrameContentSize(payload.data(), payload.size());
      bool kept = false;
      if (size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN && size <= (1u << 20)) {
        decompressed.resize(size);
        size_t n = ZSTD_decompress(decompressed.data(), decompressed.size(), payload.data(), payload.size());
        if (!ZSTD_isError(n) && n == size) {
          raw_size = static_cast<uint32_t>(size);
          kept = true;
        }
      }
      if (!kept) {
        compressed.resize(ZSTD_compressBound(payload.size()));
        size_t n = ZSTD_compress(compressed.data(), compressed.size(), payload.data(), payload.size(), 1);
        if (ZSTD_isError(n)) continue;
        compressed.resize(n);
        payload = compressed;
      }
    }
    format::ChunkHeader fixed = format::make_chunk_header(static_cast<format::ChunkType>(h.type), h.flags,
                                                          h.stream_id, payload, raw_size);
    out.append(reinterpret_cast<const char*>(&fixed), sizeof(fixed));
    out.append(payload);
  }
  if (pos < bytes.size()) out.append(bytes.substr(pos));  // a cut-off tail stays cut off
  return out;
}

void run_trace_chunks(std::string_view bytes) {
  const std::string file = fix_up_chunks(bytes);
  trace::Trace trace;
  trace::TraceSummary summary;
  bool summarized = false;
  check(load_and_summarize(file, &trace, &summary, &summarized));
  check(summarized);
  check_agree(trace, summary);
  check_loaded(trace);
  check(trace.tree().size() == trace.spans.size());
  trace::TraceSummary in_memory = trace::summarize(trace);
  check(in_memory.spans == summary.spans);
  DiscardBuffer discard;
  std::ostream sink(&discard);
  exporter::write_chrome_trace(trace, sink);
  exporter::write_spans_json(trace, sink);
  exporter::write_spans_csv(trace, sink);
}

}  // namespace strata::fuzz
