#include "trace/sample_loader.h"

#include <cstdlib>

#include "format/file_format.h"
#include "format/sample_payloads.h"

namespace strata::trace {

std::vector<std::string> SampleData::events(uint16_t process) const {
  std::vector<std::string> out;
  auto it = config.find(process);
  if (it != config.end()) {
    std::string_view list = it->second.get("events").value_or("");
    while (!list.empty()) {
      size_t comma = list.find(',');
      out.emplace_back(list.substr(0, comma));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  if (out.empty()) out.push_back("samples");
  return out;
}

uint64_t SampleData::period_ns(uint16_t process) const {
  auto it = config.find(process);
  if (it == config.end()) return 0;
  return static_cast<uint64_t>(std::max<int64_t>(0, it->second.get_int("period_ns").value_or(0)));
}

uint64_t SampleData::total() const {
  uint64_t n = 0;
  for (const SampleCount& c : counts) n += c.count;
  return n;
}

uint32_t SampleData::add_stack(std::span<const uint32_t> frame_ids) {
  stack_frames.insert(stack_frames.end(), frame_ids.begin(), frame_ids.end());
  stack_begin.push_back(static_cast<uint32_t>(stack_frames.size()));
  return static_cast<uint32_t>(stack_begin.size() - 2);
}

bool SampleChunkLoader::is_sample_chunk(uint16_t type) {
  return type >= static_cast<uint16_t>(format::ChunkType::kSampleConfig) &&
         type <= static_cast<uint16_t>(format::ChunkType::kSampleTimeline);
}

uint32_t SampleChunkLoader::lookup(const std::unordered_map<uint32_t, uint32_t>& ids, uint32_t local) {
  auto it = ids.find(local);
  if (it != ids.end()) return it->second;
  ++data_->undefined_references;
  return 0;
}

bool SampleChunkLoader::handle(const format::Chunk& chunk, uint16_t process,
                               const std::function<uint32_t(uint32_t)>& map_string, std::string* error) {
  using format::ChunkType;
  StreamIds& ids = streams_[chunk.stream_id];
  switch (static_cast<ChunkType>(chunk.type)) {
    case ChunkType::kSampleConfig: {
      format::Properties props;
      if (!format::Properties::decode(chunk.payload, &props, error)) break;
      format::Properties& c = data_->config[process];
      for (const auto& [key, value] : props.entries()) c.set(key, value);
      return true;
    }
    case ChunkType::kSampleMappings: {
      std::vector<format::SampleMapping> mappings;
      if (!format::decode_sample_mappings(chunk.payload, &mappings, error)) break;
      for (const auto& m : mappings) {
        SampleMapping out;
        out.process = process;
        out.start = m.start;
        out.end = m.end;
        out.file_offset = m.file_offset;
        out.time_ns = m.time_ns;
        out.path = map_string(m.path);
        out.build_id = m.build_id;
        out.flags = m.flags;
        ids.mappings[m.id] = static_cast<uint32_t>(data_->mappings.size());
        data_->mappings.push_back(std::move(out));
      }
      return true;
    }
    case ChunkType::kSampleFrames: {
      std::vector<format::SampleFrame> frames;
      if (!format::decode_sample_frames(chunk.payload, &frames, error)) break;
      for (const auto& f : frames) {
        SampleFrame out;
        out.kind = f.kind;
        out.process = process;
        if (f.kind == format::SampleFrameKind::kPython) {
          out.function = map_string(f.function);
          out.file = map_string(f.file);
          out.line = f.line;
        } else {
          out.offset = f.offset;
          if (f.kind == format::SampleFrameKind::kNative) {
            out.mapping = lookup(ids.mappings, f.mapping);
            if (f.function != 0) out.function = map_string(f.function);  // generated code's name
          }
        }
        ids.frames[f.id] = static_cast<uint32_t>(data_->frames.size());
        data_->frames.push_back(out);
      }
      return true;
    }
    case ChunkType::kSampleStacks: {
      std::vector<format::SampleStack> stacks;
      if (!format::decode_sample_stacks(chunk.payload, &stacks, error)) break;
      std::vector<uint32_t> global;
      for (const auto& s : stacks) {
        global.clear();
        for (uint32_t f : s.frames) global.push_back(lookup(ids.frames, f));
        ids.stacks[s.id] = data_->add_stack(global);
      }
      return true;
    }
    case ChunkType::kSampleCounts: {
      format::SampleCountsHeader h;
      std::vector<format::SampleCount> counts;
      if (!format::decode_sample_counts(chunk.payload, &h, &counts, error)) break;
      for (const auto& c : counts)
        data_->counts.push_back({process, c.tid, lookup(ids.stacks, c.stack), c.span_id, c.event, h.epoch, c.count});
      return true;
    }
    case ChunkType::kSampleTimeline: {
      uint32_t tid = 0;
      std::vector<format::SamplePoint> points;
      if (!format::decode_sample_timeline(chunk.payload, &tid, &points, error)) break;
      for (const auto& p : points)
        data_->timeline.push_back({process, tid, p.time_ns, lookup(ids.stacks, p.stack), p.event, p.weight, p.span_id});
      return true;
    }
    default:
      *error = "not a sample chunk";
      break;
  }
  ++data_->chunks_skipped;
  return false;
}

}  // namespace strata::trace
