#include "format/stream_writer.h"

#include <algorithm>

#include "format/payloads.h"

namespace strata::format {

StreamWriter::StreamWriter(ChunkWriter* out, uint64_t stream_id, int compression_level,
                           size_t spans_per_chunk, size_t max_chunk_bytes)
    : out_(out), stream_id_(stream_id), compression_level_(compression_level),
      spans_per_chunk_(std::max<size_t>(1, std::min(spans_per_chunk, max_chunk_bytes / sizeof(SpanRecord)))),
      max_chunk_bytes_(max_chunk_bytes) {
  spans_.reserve(spans_per_chunk_);
}

uint32_t StreamWriter::intern(std::string_view text) {
  if (text.empty()) return 0;
  auto [it, inserted] = ids_.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(ids_.size());
    pending_strings_.emplace_back(it->second, std::string_view(it->first));
  }
  return it->second;
}

void StreamWriter::add_span(const SpanRecord& span, std::span<const AttrRecord> attrs) {
  spans_.push_back(span);
  spans_.back().attr_count = static_cast<uint16_t>(attrs.size());
  attrs_.insert(attrs_.end(), attrs.begin(), attrs.end());
  if (spans_.size() >= spans_per_chunk_ ||
      spans_.size() * sizeof(SpanRecord) + attrs_.size() * sizeof(AttrRecord) >= max_chunk_bytes_)
    flush();
}

bool StreamWriter::flush_strings() {
  // Chunks of at most kMaxStringsChunkBytes (one longer string alone in its chunk): a table of many
  // huge names never reaches the chunk size limit.
  size_t done = 0;
  while (done < pending_strings_.size()) {
    size_t count = 0, bytes = 4;
    const std::span<const std::pair<uint32_t, std::string_view>> rest =
        std::span(pending_strings_).subspan(done);
    while (count < rest.size() &&
           (count == 0 || bytes + 8 + rest[count].second.size() <= kMaxStringsChunkBytes))
      bytes += 8 + rest[count++].second.size();
    payload_.clear();
    encode_strings(rest.first(count), &payload_);
    if (!out_->write_chunk(ChunkType::kStrings, stream_id_, payload_, compression_level_)) {
      // Not in the file: they stay pending and go out before the next chunk that may use them.
      failed_ = true;
      pending_strings_.erase(pending_strings_.begin(),
                             pending_strings_.begin() + static_cast<ptrdiff_t>(done));
      return false;
    }
    done += count;
  }
  pending_strings_.clear();
  return true;
}

bool StreamWriter::flush() {
  // Strings first: a reader that stops after any chunk has every name that chunk uses. Spans whose
  // names could not be written are not written either: they are counted lost.
  bool ok = flush_strings();
  if (spans_.empty()) return ok;
  ok = ok && write_spans_chunk();
  (ok ? spans_written_ : spans_lost_) += spans_.size();
  spans_.clear();
  attrs_.clear();
  if (!ok) failed_ = true;
  return ok;
}

bool StreamWriter::write_spans_chunk() {
  if (compression_level_ > 0) {
    payload_.clear();
    encode_spans(spans_, attrs_, &payload_);
    return out_->write_chunk(ChunkType::kSpans, stream_id_, payload_, compression_level_);
  }
  // Uncompressed: the records go from their vectors to the file in one writev, not copied first.
  SpansChunkHeader h{static_cast<uint32_t>(spans_.size()), static_cast<uint32_t>(attrs_.size())};
  const std::string_view parts[3] = {
      {reinterpret_cast<const char*>(&h), sizeof(h)},
      {reinterpret_cast<const char*>(spans_.data()), spans_.size() * sizeof(SpanRecord)},
      {reinterpret_cast<const char*>(attrs_.data()), attrs_.size() * sizeof(AttrRecord)}};
  return out_->write_chunk_parts(ChunkType::kSpans, stream_id_, parts);
}

bool StreamWriter::write_properties(ChunkType type, const Properties& props) {
  // A stream's closing chunks go out even after its data failed: they count what was lost.
  flush();
  const bool ok = out_->write_chunk(type, stream_id_, props.encode(), 0);
  if (!ok) failed_ = true;
  return ok;
}

bool StreamWriter::write_payload(ChunkType type, std::string_view payload) {
  bool ok = flush_strings() && out_->write_chunk(type, stream_id_, payload, compression_level_);
  if (!ok) {
    failed_ = true;
    ++chunks_lost_;
  }
  return ok;
}

bool StreamWriter::write_clock_snapshot(std::span<const ClockReading> readings) {
  payload_.clear();
  encode_clock_snapshot(readings, &payload_);
  const bool ok = out_->write_chunk(ChunkType::kClockSnapshot, stream_id_, payload_, 0);
  if (!ok) failed_ = true;
  return ok;
}

}  // namespace strata::format
