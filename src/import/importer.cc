#include "import/importer.h"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "format/file_format.h"
#include "format/input_file.h"
#include "format/mapped_file.h"
#include "import/converters.h"
#include "import/ncu_csv.h"
#include "import/nsys_sqlite_reader.h"
#include "trace/trace_reader.h"

namespace strata::import {
namespace {

constexpr size_t kMaxInput = size_t{4} << 30;  // 4 GiB of JSON: beyond that, say so instead of thrashing

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// Output a gzip'd input may reach before its ratio is checked: small files are often very dense.
constexpr size_t kRatioFloor = size_t{64} << 20;

bool gunzip(std::string_view in, const std::string& source, std::string* out, std::string* error) {
  // Bounded by what it expanded from so far and in all (format::inflate_limits): a 17 MB bomb
  // stops at 64 MiB instead of growing to gigabytes and then failing as invalid JSON.
  const format::InflateLimits limits = format::inflate_limits();
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    *error = source + ": zlib could not start";
    return false;
  }
  out->clear();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
  int rc = Z_OK;
  char buffer[1 << 16];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out->append(buffer, sizeof(buffer) - z.avail_out);
    const size_t consumed = static_cast<size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
    if (out->size() > limits.max_bytes) {
      inflateEnd(&z);
      *error = source + ": decompresses to more than " + std::to_string(limits.max_bytes >> 20) +
               " MiB, the limit; split the trace, or raise the limit with " + format::kInflateBytesEnv +
               "=N (MiB)";
      return false;
    }
    if (out->size() > kRatioFloor && out->size() / limits.ratio > consumed) {
      inflateEnd(&z);
      *error = source + ": compressed offset " + std::to_string(consumed) + ": gzip data expands more than " +
               std::to_string(limits.ratio) + "x (" + std::to_string(out->size()) + " bytes from " +
               std::to_string(consumed) +
               "), the limit: a compression bomb or damaged data; if the trace is "
               "genuine, raise the limit with " +
               format::kInflateRatioEnv + "=N";
      return false;
    }
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (gzip a b > c) continue.
      size_t used = static_cast<size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
      if (used < in.size() && is_gzip(in.substr(used))) {
        inflateReset(&z);
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
    if (z.avail_in == 0 && z.avail_out != 0) break;
  }
  size_t offset = static_cast<size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    *error = source + ": compressed offset " + std::to_string(offset) + ": gzip data " +
             (rc == Z_DATA_ERROR ? "corrupt" : "truncated") + " after " + std::to_string(out->size()) +
             " bytes of JSON; re-copy or re-export the file";
    return false;
  }
  return true;
}

std::string describe_start(std::string_view bytes) {
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), format::kFileMagic, 8) == 0)
    return "this is already a Strata trace; use `strata info` / `strata export` on it directly";
  if (bytes.size() >= 4 && static_cast<unsigned char>(bytes[0]) == 0x28 &&
      static_cast<unsigned char>(bytes[1]) == 0xb5)
    return "zstd-compressed data; decompress it first (zstd -d)";
  if (bytes.size() >= 4 && bytes.substr(0, 4) == "PK\x03\x04") return "a zip archive; unzip it first";
  return "not JSON (expected '{' or '['); pass a Kineto, ONNX Runtime or TensorFlow trace JSON (.json or "
         ".json.gz)";
}

bool contains(std::string_view text, std::string_view token) {
  return text.find(token) != std::string_view::npos;
}

}  // namespace

std::string_view format_name(Format format) {
  switch (format) {
    case Format::kKineto:
      return "kineto";
    case Format::kOnnxRuntime:
      return "onnxruntime";
    case Format::kTensorFlow:
      return "tensorflow";
  }
  return "?";
}

std::optional<Format> parse_format(std::string_view name) {
  if (name == "kineto" || name == "pytorch") return Format::kKineto;
  if (name == "onnxruntime" || name == "ort") return Format::kOnnxRuntime;
  if (name == "tensorflow" || name == "tf") return Format::kTensorFlow;
  return std::nullopt;
}

std::optional<Format> detect_format(std::string_view text, std::string* error) {
  size_t p = 0;
  while (p < text.size() && (text[p] == ' ' || text[p] == '\n' || text[p] == '\r' || text[p] == '\t')) ++p;
  if (p == text.size()) {
    *error = "empty input; pass a profiler trace JSON";
    return std::nullopt;
  }
  if (text[p] != '{' && text[p] != '[') {
    *error = "offset " + std::to_string(p) + ": " + describe_start(text.substr(p));
    return std::nullopt;
  }
  // Markers only one producer writes (checked on the text, before a full parse).
  if (contains(text, "\"schemaVersion\"") || contains(text, "\"cpu_op\"") ||
      contains(text, "\"cuda_runtime\"") || contains(text, "\"user_annotation\"") ||
      contains(text, "\"python_function\"") || contains(text, "\"ac2g\"") ||
      contains(text, "\"deviceProperties\""))
    return Format::kKineto;
  // torch.autograd.profiler's own export (no Kineto): a bare array, ops on the pid "CPU functions".
  if (text[p] == '[' &&
      (contains(text, "\"pid\": \"CPU functions\"") || contains(text, "\"pid\":\"CPU functions\"")))
    return Format::kKineto;
  if (text[p] == '[' &&
      (contains(text, "\"op_name\"") || (contains(text, "\"Session\"") && contains(text, "\"Node\""))))
    return Format::kOnnxRuntime;
  if (contains(text, "/device:") || contains(text, "/host:") || contains(text, "/job:") ||
      contains(text, "\"TensorFlow Ops\""))
    return Format::kTensorFlow;
  if (contains(text, "\"traceEvents\""))
    *error =
        "a Chrome trace, but from no profiler Strata recognizes (no Kineto, ONNX Runtime or TensorFlow "
        "markers); name the producer with --format kineto|onnxruntime|tensorflow";
  else
    *error =
        "JSON, but not a profiler trace (no traceEvents array, no ONNX Runtime events); pass a Kineto, "
        "ONNX Runtime or TensorFlow trace";
  return std::nullopt;
}

void release_pages(const char* begin, const char* end) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) & ~(page - 1);
  // Advice only: where it fails the pages simply stay until the buffer is freed.
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void advise_huge_pages(const void* begin, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 4 * kHuge) return;
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~(kHuge - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

bool import_into(std::string_view bytes, const std::string& source, trace::TraceBuilder& out,
                 std::string* error, const ImportOptions& opts, ImportStats* stats) {
  std::string inflated;
  size_t padding = opts.input_padding;
  std::function<void()> release = opts.release_input;
  std::function<void(size_t)> release_before = opts.release_input_before;
  if (is_gzip(bytes)) {
    if (!gunzip(bytes, source, &inflated, error)) return false;
    const size_t size = inflated.size();
    inflated.resize(size + kJsonPadding, '\0');  // parsed in place: no second copy
    bytes = std::string_view(inflated.data(), size);
    padding = kJsonPadding;
    release = [&inflated] { std::string().swap(inflated); };
    release_before = [&inflated, done = size_t{0}](size_t n) mutable {
      release_pages(inflated.data() + done, inflated.data() + n);
      done = n;
    };
  }
  std::optional<Format> format;
  if (opts.format == "auto") {
    std::string why;
    format = detect_format(bytes, &why);
    if (!format) {
      *error = source + ": " + why;
      return false;
    }
  } else {
    format = parse_format(opts.format);
    if (!format) {
      *error = "unknown format '" + opts.format + "'; use auto, kineto, onnxruntime or tensorflow";
      return false;
    }
    std::string why;
    if (!detect_format(bytes, &why) && why.find("not JSON") != std::string::npos) {
      *error = source + ": " + why;
      return false;
    }
  }
  ImportBuilder builder(&out, *format, source);
  builder.set_input_padding(padding);
  builder.set_input_release(std::move(release));
  builder.set_input_release_before(std::move(release_before));
  switch (*format) {
    case Format::kKineto:
      return convert_kineto(bytes, builder, stats, error);
    case Format::kOnnxRuntime:
      return convert_onnxruntime(bytes, builder, stats, error);
    case Format::kTensorFlow:
      return convert_tensorflow(bytes, builder, stats, error);
  }
  return false;
}

bool import_buffer_with_stats(std::string_view bytes, const std::string& source, trace::Trace* out,
                              std::string* error, const ImportOptions& opts, ImportStats* stats) {
  trace::TraceBuilder builder(out);
  if (!import_into(bytes, source, builder, error, opts, stats)) return false;
  builder.finish({.structure = false, .tree = {}});
  return true;
}

bool import_buffer(std::string_view bytes, const std::string& source, trace::Trace* out, std::string* error,
                   const ImportOptions& opts) {
  return import_buffer_with_stats(bytes, source, out, error, opts, nullptr);
}

namespace {

constexpr const char* kInputLimitHint = "split the trace or import a smaller window";

// A regular file only (a FIFO would block, /dev/zero never end), read whole up to a bound.
bool read_input(const std::string& path, std::string* bytes, std::string* error) {
  return format::read_regular_file(path, kMaxInput, kInputLimitHint, bytes, error);
}

// The decompressed size a gzip file declares (its last 4 bytes: the size modulo 4 GiB), or 0.
uint64_t gzip_declared_size(const std::string& path) {
  uint64_t size = 0;
  std::string ignored;
  const int fd = format::open_regular_file(path, &size, &ignored);  // never blocks on a FIFO
  if (fd < 0) return 0;
  unsigned char b[4] = {};
  const bool read = size >= 4 && ::pread(fd, b, 4, static_cast<off_t>(size - 4)) == 4;
  ::close(fd);
  if (!read) return 0;
  return uint64_t{b[0]} | uint64_t{b[1]} << 8 | uint64_t{b[2]} << 16 | uint64_t{b[3]} << 24;
}

// Chrome-trace JSON of PyTorch/Kineto, ONNX Runtime and TensorFlow (plain or gzip).
class JsonReader final : public trace::TraceReader {
 public:
  std::string_view name() const override { return "json"; }
  std::string_view description() const override {
    return "Kineto/PyTorch profiler, ONNX Runtime or TensorFlow trace JSON (.json, .json.gz; --format "
           "kineto|onnxruntime|tensorflow names the producer)";
  }
  std::vector<std::string_view> formats() const override {
    return {"json", "kineto", "pytorch", "onnxruntime", "ort", "tensorflow", "tf"};
  }
  int probe(const trace::ProbeInput& input) const override {
    if (input.is_directory) return 0;
    if (is_gzip(input.head)) return 10;  // the producer is told apart once decompressed
    size_t p = 0;
    std::string_view h = input.head;
    if (h.substr(0, 3) == "\xEF\xBB\xBF") p = 3;  // UTF-8 byte order mark
    while (p < h.size() && (h[p] == ' ' || h[p] == '\n' || h[p] == '\r' || h[p] == '\t')) ++p;
    return p < h.size() && (h[p] == '{' || h[p] == '[') ? 10 : 0;
  }
  uint64_t memory_estimate(const trace::ProbeInput& input) const override {
    // The JSON text is held whole while converted (plus the compressed bytes for .gz), and the
    // converted spans, attributes and strings take about as much again.
    const uint64_t text =
        is_gzip(input.head) ? std::max(gzip_declared_size(input.path), input.size) : input.size;
    return text * 2 + (is_gzip(input.head) ? input.size : 0);
  }
  bool read(const trace::ProbeInput& input, std::string_view format, trace::TraceBuilder& builder,
            std::string* error) const override {
    ImportOptions opts;
    opts.format = format == "json" ? "auto" : std::string(format);
    // The file is parsed where the kernel maps it: no buffer for the kernel to zero and copy into
    // (500 MB trace: system time 30-50% lower, peak memory 1.09x -> 0.81x of the input). Read
    // into memory only where it cannot be mapped.
    format::MappedFile mapped;
    if (!mapped.map(input.path, kMaxInput, kInputLimitHint, kJsonPadding, error)) return false;
    if (!mapped.mapped()) return read_copy(input, opts, builder, error);
    builder.count(stats::Stat::kLoadFiles);
    builder.count(stats::Stat::kLoadBytes, mapped.text().size());
    opts.input_padding = kJsonPadding;
    opts.release_input = [&mapped] { mapped.unmap(); };
    // A large file is parsed window by window: what is behind the parser leaves memory as it goes,
    // so the text and the spans made of it are not resident together.
    opts.release_input_before = [&mapped, done = size_t{0}](size_t n) mutable {
      mapped.release(done, n);
      done = n;
    };
    const bool ok = import_into(mapped.text(), input.path, builder, error, opts);
    if (mapped.changed()) {  // whatever was made of the zeros read in its place
      *error = input.path +
               ": the file shrank while it was being read (another process truncated or rewrote it); "
               "import it again once it is complete";
      return false;
    }
    return ok;
  }

 private:
  static bool read_copy(const trace::ProbeInput& input, ImportOptions opts, trace::TraceBuilder& builder,
                        std::string* error) {
    std::string bytes;
    bytes.reserve(input.size + kJsonPadding);  // the padding fits without moving the text
    advise_huge_pages(bytes.data(), bytes.capacity());
    if (!read_input(input.path, &bytes, error)) return false;
    builder.count(stats::Stat::kLoadFiles);
    builder.count(stats::Stat::kLoadBytes, bytes.size());
    const size_t size = bytes.size();
    bytes.resize(size + kJsonPadding, '\0');
    opts.input_padding = kJsonPadding;
    opts.release_input = [&bytes] { std::string().swap(bytes); };
    opts.release_input_before = [&bytes, done = size_t{0}](size_t n) mutable {
      release_pages(bytes.data() + done, bytes.data() + n);
      done = n;
    };
    return import_into(std::string_view(bytes.data(), size), input.path, builder, error, opts);
  }
};

}  // namespace

void register_readers() {
  trace::register_reader(std::make_unique<JsonReader>());
  register_nsys_reader();
  register_ncu_reader();
}

uint64_t dropped_events(const stats::StatSet& s) {
  uint64_t total = 0;
  for (const auto& [stat, count] : s.nonzero()) {
    const stats::StatInfo& info = stats::info(stat);
    if (info.source == stats::Source::kImport && info.disk == stats::Disk::kStats &&
        stat != stats::Stat::kImportAttributeLimit)
      total += count;
  }
  for (const auto& [key, count] : s.unregistered())
    if (key.rfind("dropped.import.", 0) == 0) total += count;
  return total;
}

uint64_t accounted_events(const stats::StatSet& s) {
  using stats::Stat;
  return s.get(Stat::kImportSpansWritten) - s.get(Stat::kImportCounterSamples) +
         s.get(Stat::kImportCounterEvents) + s.get(Stat::kImportEndEvents) +
         s.get(Stat::kImportMetadataEvents) + s.get(Stat::kImportFlowEvents) + dropped_events(s);
}

bool import_trace_with_stats(const std::string& path, trace::Trace* out, std::string* error,
                             const ImportOptions& opts, ImportStats* stats) {
  std::string bytes;
  if (!read_input(path, &bytes, error)) return false;
  const size_t size = bytes.size();
  bytes.resize(size + kJsonPadding, '\0');
  ImportOptions padded = opts;
  padded.input_padding = kJsonPadding;
  return import_buffer_with_stats(std::string_view(bytes.data(), size), path, out, error, padded, stats);
}

bool import_trace(const std::string& path, trace::Trace* out, std::string* error, const ImportOptions& opts) {
  return import_trace_with_stats(path, out, error, opts, nullptr);
}

}  // namespace strata::import
