#include "format/trace_merge.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <utility>

#include "core/stats.h"
#include "format/chunk_reader.h"
#include "format/chunk_writer.h"

namespace strata::format {
namespace {

// Copies every valid chunk of each input (opened by `open_input`) into `output` (created, or
// appended to), then the record. `open_input` returns false with one line in its error argument when
// an input cannot be read.
MergeResult merge(size_t input_count,
                  const std::function<bool(size_t, ChunkReader*, std::string*)>& open_input,
                  const std::string& output, const Properties& record, std::vector<std::string> warnings,
                  bool append = false) {
  MergeResult result;
  result.warnings = std::move(warnings);
  ChunkWriter writer;
  if (!(append ? writer.open_append(output) : writer.open(output))) {
    result.error = writer.error();
    return result;
  }
  // Every process writes its own file under its own random stream id: a stream id that an earlier
  // input already used is another file impersonating that process (a forged or copied part), and
  // its chunks are left out rather than mixed into the first one's process.
  std::unordered_map<uint64_t, std::pair<size_t, std::string>> stream_owner;  // -> (input, its name)
  for (size_t i = 0; i < input_count; ++i) {
    ChunkReader reader;
    std::string error;
    if (!open_input(i, &reader, &error)) {
      result.warnings.push_back(error);
      continue;
    }
    std::unordered_map<uint64_t, uint64_t> foreign;  // stream id -> chunks left out of this input
    Chunk chunk;
    for (;;) {
      auto status = reader.next(&chunk);
      if (status != ChunkReader::Status::kChunk) {
        if (status == ChunkReader::Status::kError) result.warnings.push_back(reader.error());
        break;
      }
      if (chunk.type != static_cast<uint16_t>(ChunkType::kRecord)) {
        auto [owner, first] = stream_owner.try_emplace(chunk.stream_id, i, reader.name());
        if (!first && owner->second.first != i) {
          ++foreign[chunk.stream_id];
          continue;
        }
      }
      // Copied as it is, unless this reader took it only because STRATA_MAX_INFLATE_RATIO was
      // raised: the merged file must load with the default limits, so it is stored uncompressed.
      const uint64_t stored_size = chunk.framed.size() - sizeof(ChunkHeader);
      const bool too_dense = (chunk.flags & kChunkZstd) != 0 &&
                             !inflate_within(chunk.payload.size(), stored_size, kDefaultInflateRatio);
      if (!(too_dense ? writer.write_chunk(static_cast<ChunkType>(chunk.type), chunk.stream_id, chunk.payload)
                      : writer.write_raw(chunk.framed))) {
        result.error = writer.error();
        return result;
      }
      ++result.chunks;
    }
    for (const auto& w : reader.warnings()) result.warnings.push_back(w);
    for (const auto& [stream_id, count] : foreign) {
      result.skipped_chunks += count;
      result.warnings.push_back(reader.name() + ": " + std::to_string(count) + " chunk(s) of stream " +
                                std::to_string(stream_id) + ", which " + stream_owner[stream_id].second +
                                " already wrote: a forged or copied file claiming another process; left out");
    }
    if (reader.truncated()) ++result.truncated_inputs;
  }
  // The merged file keeps what was wrong with its inputs: the record lists every warning.
  Properties full_record = record;
  if (result.skipped_chunks > 0)  // the one registry's count, read back by every reader of the file
    full_record.set_int(std::string(stats::info(stats::Stat::kMergeForeignStreamChunks).disk_key),
                        static_cast<int64_t>(result.skipped_chunks));
  for (size_t i = 0; i < result.warnings.size(); ++i)
    full_record.set("warning." + std::to_string(i), result.warnings[i]);
  if (!full_record.entries().empty() && !writer.write_chunk(ChunkType::kRecord, 0, full_record.encode())) {
    result.error = writer.error();
    return result;
  }
  writer.close();
  result.ok = true;
  return result;
}

bool has_trace_extension(const std::string& name) {
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".strata") == 0;
}

}  // namespace

MergeResult merge_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                              const Properties& record) {
  return merge(inputs.size(),
               [&](size_t i, ChunkReader* reader, std::string* error) {
                 if (reader->open(inputs[i])) return true;
                 *error = reader->error();
                 return false;
               },
               output, record, {});
}

PartFiles list_part_files(int dir_fd, const std::string& dir_name) {
  PartFiles parts;
  int copy = ::dup(dir_fd);
  DIR* dir = copy >= 0 ? ::fdopendir(copy) : nullptr;
  if (dir == nullptr) {
    if (copy >= 0) ::close(copy);
    parts.skipped.push_back(dir_name + ": cannot list the work directory: " + std::strerror(errno));
    return parts;
  }
  ::rewinddir(dir);  // the duplicate shares the descriptor's position: list from the start
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || !has_trace_extension(name)) continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string path = dir_name + "/" + name;
    if (S_ISDIR(st.st_mode)) continue;  // a run's own subdirectory (repeated runs)
    if (S_ISLNK(st.st_mode))
      parts.skipped.push_back(path + ": a symbolic link, not read");
    else if (!S_ISREG(st.st_mode))
      parts.skipped.push_back(path + ": not a regular file, not read");
    else if (st.st_uid != ::geteuid())
      parts.skipped.push_back(path + ": owned by uid " + std::to_string(st.st_uid) +
                              ", not by this user; not read");
    else
      parts.names.push_back(name);
  }
  ::closedir(dir);
  std::sort(parts.names.begin(), parts.names.end());
  return parts;
}

namespace {

MergeResult merge_parts(int dir_fd, const std::string& dir_name, const PartFiles& parts, const std::string& output,
                        const Properties& record, bool append) {
  auto open_part = [&](size_t i, ChunkReader* reader, std::string* error) {
    const std::string path = dir_name + "/" + parts.names[i];
    int fd = ::openat(dir_fd, parts.names[i].c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = path + ": cannot open without following links: " + std::strerror(errno) + "; not read";
      return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      ::close(fd);
      *error = path + ": no longer a regular file of this user; not read";
      return false;
    }
    if (reader->open_fd(fd, path)) return true;
    *error = reader->error();
    return false;
  };
  return merge(parts.names.size(), open_part, output, record, parts.skipped, append);
}

}  // namespace

MergeResult merge_part_files(int dir_fd, const std::string& dir_name, const PartFiles& parts,
                             const std::string& output, const Properties& record) {
  return merge_parts(dir_fd, dir_name, parts, output, record, false);
}

MergeResult append_part_files(int dir_fd, const std::string& dir_name, const PartFiles& parts,
                              const std::string& output, const Properties& record) {
  return merge_parts(dir_fd, dir_name, parts, output, record, true);
}

}  // namespace strata::format
