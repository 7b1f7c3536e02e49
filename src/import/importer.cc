#include "import/importer.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "format/file_format.h"
#include "format/input_file.h"
#include "import/converters.h"

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

bool import_buffer_with_stats(std::string_view bytes, const std::string& source, model::Trace* out,
                              std::string* error, const ImportOptions& opts, ImportStats* stats) {
  std::string inflated;
  if (is_gzip(bytes)) {
    if (!gunzip(bytes, source, &inflated, error)) return false;
    bytes = inflated;
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
  ImportBuilder builder(out, *format, source);
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

bool import_buffer(std::string_view bytes, const std::string& source, model::Trace* out, std::string* error,
                   const ImportOptions& opts) {
  return import_buffer_with_stats(bytes, source, out, error, opts, nullptr);
}

bool import_trace_with_stats(const std::string& path, model::Trace* out, std::string* error,
                             const ImportOptions& opts, ImportStats* stats) {
  // A regular file only (a FIFO would block, /dev/zero never end), read whole up to a bound.
  std::string bytes;
  if (!format::read_regular_file(path, kMaxInput, "split the trace or import a smaller window", &bytes,
                                 error))
    return false;
  return import_buffer_with_stats(bytes, path, out, error, opts, stats);
}

bool import_trace(const std::string& path, model::Trace* out, std::string* error, const ImportOptions& opts) {
  return import_trace_with_stats(path, out, error, opts, nullptr);
}

}  // namespace strata::import
