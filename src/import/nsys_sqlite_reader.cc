// Nsight Systems SQLite exports (`nsys export --type sqlite`, schemas 2.x and 3.x) as a reader of the
// model's registry. The tables are translated, row by row, into the Kineto event vocabulary
// (categories kernel, gpu_memcpy, gpu_memset, cuda_sync, cuda_runtime, cuda_driver, user_annotation)
// and handed to the Kineto converter, so correlation ids, levels, activity types, process
// resolution and drop accounting are the ones every Kineto trace gets: analyses cannot tell the
// spans came from nsys.
//
// Mapping: CUPTI_ACTIVITY_KIND_KERNEL -> kernels (grid, block, registers, shared memory, device,
// stream, correlation id; graphNodeId and cluster dims kept when present); MEMCPY -> "Memcpy HtoD"...
// by copyKind; MEMSET; SYNCHRONIZATION; RUNTIME / DRIVER -> API calls named through StringIds with
// the versioned suffix stripped (cudaLaunchKernel_v7000 -> cudaLaunchKernel, original kept as
// nsys_name); NVTX_EVENTS ranges (push/pop, start/end) -> annotations containing their launches, at
// the model level (user_annotation) or the layer level (nvtx_layer) by the rule of
// nsys_nvtx_levels.h, marks -> instants; OSRT_API -> OS runtime calls (os_runtime, counted in
// import.nsys.osrt_untyped_calls). globalTid: pid = (g >> 24) & 0xFFFFFF,
// tid = g & 0xFFFFFF. Tables absent because a kind was not captured are skipped. Metadata comes
// from META_DATA_EXPORT (3.x) or EXPORT_META_DATA (2.x). A row with NULL or non-integer times is
// passed on with an unusable ts and so counted as dropped by the converter (import.*).
#include "import/nsys_sqlite_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/torch_nvtx_names.h"
#include "core/utf8.h"
#include "format/input_file.h"
#include "format/untrusted_sqlite.h"
#include "import/converters.h"
#include "import/importer.h"
#include "import/nsys_nvtx_levels.h"
#include "trace/trace_reader.h"

namespace strata::import {
namespace {

constexpr std::string_view kMagic{"SQLite format 3\0", 16};

struct Stmt {
  sqlite3_stmt* handle = nullptr;
  ~Stmt() {
    if (handle) sqlite3_finalize(handle);
  }
};

bool table_exists(sqlite3* db, const char* table) {
  Stmt s;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name=?", -1, &s.handle,
                         nullptr) != SQLITE_OK)
    return false;
  sqlite3_bind_text(s.handle, 1, table, -1, SQLITE_STATIC);
  return sqlite3_step(s.handle) == SQLITE_ROW;
}

bool has_column(sqlite3* db, const std::string& table, const char* column) {
  Stmt s;
  const std::string sql = "SELECT 1 FROM pragma_table_info('" + table + "') WHERE name=?";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s.handle, nullptr) != SQLITE_OK) return false;
  sqlite3_bind_text(s.handle, 1, column, -1, SQLITE_STATIC);
  return sqlite3_step(s.handle) == SQLITE_ROW;
}

// A JSON string; bytes that are not UTF-8 (a name in a foreign file) become U+FFFD, or the whole
// document would fail to parse.
void append_escaped(std::string* out, std::string_view text) {
  out->push_back('"');
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    uint32_t code_point = 0;
    const size_t n = c < 0x80 ? 1 : core::decode_utf8(text, i, &code_point);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->append(n == 0 ? std::string_view("\\ufffd") : text.substr(i, n));
    }
    i += n == 0 ? 1 : n;
  }
  out->push_back('"');
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

// Nanoseconds as exact decimal microseconds ("12.345").
void append_us(std::string* out, int64_t ns) {
  if (ns < 0) {
    out->push_back('-');
    ns = -(ns + 1) + 1;  // INT64_MIN cannot occur: the caller checks the range
  }
  append_int(out, ns / 1000);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(ns % 1000));
  out->append(frac);
}

// A column read as an integer only when it holds one (NULL, text, real, blob: nullopt).
std::optional<int64_t> int_col(sqlite3_stmt* s, int i) {
  if (i < 0 || sqlite3_column_type(s, i) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_int64(s, i);
}

// cudaLaunchKernel_v7000 -> cudaLaunchKernel; cuMemcpy_ptds_v2 kept apart from its base only by the
// version part.
std::string_view canonical_api_name(std::string_view name) {
  const size_t p = name.rfind("_v");
  if (p == std::string_view::npos || p + 2 >= name.size()) return name;
  for (size_t i = p + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, p);
}

std::string_view copy_kind_name(int64_t kind) {
  static constexpr std::string_view kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind >= 1 && kind <= 10 ? kNames[kind] : kNames[0];
}

// What the translation counted for the import's stats (import.nsys.*).
struct NsysCounts {
  uint64_t osrt = 0, unknown_schema = 0, nvtx_model = 0, nvtx_layer = 0;
  std::string schema_major;  // the newer schema's major version, for the warning
};

class Translator {
 public:
  // `max_json`: the most event text the file may become (its size times the inflate ratio).
  Translator(const format::UntrustedSqlite& db, std::string source, uint64_t max_json)
      : db_(db.handle()), untrusted_(db), source_(std::move(source)), max_json_(max_json) {}
  const NsysCounts& counts() const { return counts_; }

  bool run(std::string* json, std::string* error) {
    out_ = json;
    out_->append("{\"traceEvents\":[");
    if (!table_exists(db_, "StringIds")) {
      *error = source_ +
               ": not an Nsight Systems export (no StringIds table); export it with `nsys export "
               "--type sqlite`";
      return false;
    }
    if (!load_strings(error)) return false;
    bool any = false;
    for (const char* t :
         {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
          "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER",
          "NVTX_EVENTS", "OSRT_API"}) {
      if (!table_exists(db_, t)) continue;
      any = true;
      if (!table(t, error)) return false;
      if (std::string_view(t) == "NVTX_EVENTS") emit_nvtx();
      if (out_->size() > max_json_) return too_large(error);
    }
    if (!any) {
      *error = source_ +
               ": no activity table (CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS, OSRT_API) in this SQLite "
               "file; profile with --trace=cuda,nvtx and export with `nsys export --type sqlite`";
      return false;
    }
    names();
    out_->append("]");
    metadata();
    rank_hints();
    out_->append("}");
    return true;
  }

 private:
  bool fail(const std::string& table, std::string* error) {
    *error = source_ + ": table " + table + ": " + untrusted_.message() +
             "; the file is not a complete Nsight Systems export: re-export with `nsys export --type sqlite`";
    return false;
  }

  // A few rows naming one huge string again and again would make gigabytes of events from a small
  // file: the events may be at most the inflate ratio times the file (real exports: 0.02-1.1x).
  bool too_large(std::string* error) {
    *error = source_ + ": its rows make more than " + std::to_string(max_json_ >> 20) +
             " MiB of events (at most " + std::to_string(format::inflate_limits().ratio) +
             " times the file); for a file known to be genuine, raise " + format::kInflateRatioEnv +
             "=N (or " + format::kInflateBytesEnv + "=N)";
    return false;
  }

  bool load_strings(std::string* error) {
    Stmt s;
    if (sqlite3_prepare_v2(db_, "SELECT id, value FROM StringIds", -1, &s.handle, nullptr) != SQLITE_OK)
      return fail("StringIds", error);
    int rc;
    while ((rc = sqlite3_step(s.handle)) == SQLITE_ROW) {
      const auto id = int_col(s.handle, 0);
      const unsigned char* v = sqlite3_column_text(s.handle, 1);
      if (id && v) strings_[*id] = reinterpret_cast<const char*>(v);
    }
    if (rc != SQLITE_DONE) return fail("StringIds", error);
    return true;
  }

  std::string_view str(std::optional<int64_t> id) const {
    if (!id) return {};
    auto it = strings_.find(*id);
    return it == strings_.end() ? std::string_view{} : std::string_view(it->second);
  }

  void begin(const char* ph, std::string_view cat, std::string_view name) {
    if (events_++) out_->push_back(',');
    out_->append("{\"ph\":\"").append(ph).append("\",\"cat\":");
    append_escaped(out_, cat);
    out_->append(",\"name\":");
    append_escaped(out_, name.empty() ? std::string_view("<unnamed>") : name);
  }
  void times(std::optional<int64_t> start, std::optional<int64_t> end, bool instant) {
    constexpr int64_t kLimit = int64_t{1} << 62;
    const auto in_range = [](std::optional<int64_t> t) { return t && *t > -kLimit && *t < kLimit; };
    out_->append(",\"ts\":");
    if (in_range(start))
      append_us(out_, *start);
    else
      out_->append("null");
    if (instant) return;
    out_->append(",\"dur\":");
    // Both ends in the range (an end at INT64_MIN overflowed the difference: fuzz_import_nsys_sql).
    if (in_range(start) && in_range(end))
      append_us(out_, *end - *start);
    else
      out_->append("null");
  }
  void id_field(const char* key, std::optional<int64_t> v) {
    out_->append(",\"").append(key).append("\":");
    if (v)
      append_int(out_, *v);
    else
      out_->append("0");
  }
  void arg(bool* first, std::string_view key, std::optional<int64_t> v) {
    if (!v) return;
    out_->append(*first ? ",\"args\":{" : ",");
    *first = false;
    append_escaped(out_, key);
    out_->push_back(':');
    append_int(out_, *v);
  }
  void arg_text(bool* first, std::string_view key, std::string_view v) {
    out_->append(*first ? ",\"args\":{" : ",");
    *first = false;
    append_escaped(out_, key);
    out_->push_back(':');
    append_escaped(out_, v);
  }
  void arg_dims(bool* first, std::string_view key, std::optional<int64_t> x, std::optional<int64_t> y,
                std::optional<int64_t> z) {
    if (!x || !y || !z) return;
    out_->append(*first ? ",\"args\":{" : ",");
    *first = false;
    append_escaped(out_, key);
    out_->append(":[");
    append_int(out_, *x);
    out_->push_back(',');
    append_int(out_, *y);
    out_->push_back(',');
    append_int(out_, *z);
    out_->push_back(']');
  }
  void end_args(bool first) { out_->append(first ? "}" : "}}"); }

  // Column index by name, -1 when the schema lacks it.
  struct Cols {
    std::unordered_map<std::string, int> index;
    int operator[](const char* name) const {
      auto it = index.find(name);
      return it == index.end() ? -1 : it->second;
    }
  };

  bool table(const std::string& t, std::string* error) {
    for (const char* required : {"start"}) {
      if (!has_column(db_, t, required)) {
        *error = source_ + ": table " + t + " has no column '" + required +
                 "'; not an Nsight Systems export this reader understands (re-export with `nsys export "
                 "--type sqlite`)";
        return false;
      }
    }
    Stmt s;
    const std::string sql = "SELECT * FROM " + t;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s.handle, nullptr) != SQLITE_OK) return fail(t, error);
    Cols c;
    for (int i = 0; i < sqlite3_column_count(s.handle); ++i) c.index[sqlite3_column_name(s.handle, i)] = i;
    int rc;
    while ((rc = sqlite3_step(s.handle)) == SQLITE_ROW) {
      row(t, s.handle, c);
      if (out_->size() > max_json_) return too_large(error);
    }
    if (rc != SQLITE_DONE) return fail(t, error);
    return true;
  }

  void thread_ids(sqlite3_stmt* s, int col) {
    const auto g = int_col(s, col);
    const int64_t pid = g ? (*g >> 24) & 0xFFFFFF : 0;
    const int64_t tid = g ? *g & 0xFFFFFF : 0;
    id_field("pid", pid);
    id_field("tid", tid);
  }

  void row(const std::string& t, sqlite3_stmt* s, const Cols& c) {
    const auto start = int_col(s, c["start"]);
    const auto end = int_col(s, c["end"]);
    const auto corr = int_col(s, c["correlationId"]);
    bool first = true;
    if (t == "CUPTI_ACTIVITY_KIND_KERNEL") {
      std::string_view name = str(int_col(s, c["demangledName"]));
      if (name.empty()) name = str(int_col(s, c["shortName"]));
      begin("X", "kernel", name);
      times(start, end, false);
      id_field("pid", int_col(s, c["deviceId"]));
      id_field("tid", int_col(s, c["streamId"]));
      arg(&first, "correlation", corr);
      arg(&first, "device", int_col(s, c["deviceId"]));
      arg(&first, "stream", int_col(s, c["streamId"]));
      arg(&first, "registers per thread", int_col(s, c["registersPerThread"]));
      const auto st = int_col(s, c["staticSharedMemory"]);
      const auto dy = int_col(s, c["dynamicSharedMemory"]);
      if (st && dy) arg(&first, "shared memory", *st + *dy);
      arg_dims(&first, "grid", int_col(s, c["gridX"]), int_col(s, c["gridY"]), int_col(s, c["gridZ"]));
      arg_dims(&first, "block", int_col(s, c["blockX"]), int_col(s, c["blockY"]), int_col(s, c["blockZ"]));
      arg_dims(&first, "cluster", int_col(s, c["clusterX"]), int_col(s, c["clusterY"]),
               int_col(s, c["clusterZ"]));
      arg(&first, "graph node id", int_col(s, c["graphNodeId"]));
      end_args(first);
    } else if (t == "CUPTI_ACTIVITY_KIND_MEMCPY" || t == "CUPTI_ACTIVITY_KIND_MEMSET") {
      const bool copy = t == "CUPTI_ACTIVITY_KIND_MEMCPY";
      const std::string name =
          copy ? "Memcpy " + std::string(copy_kind_name(int_col(s, c["copyKind"]).value_or(0))) : "Memset";
      begin("X", copy ? "gpu_memcpy" : "gpu_memset", name);
      times(start, end, false);
      id_field("pid", int_col(s, c["deviceId"]));
      id_field("tid", int_col(s, c["streamId"]));
      arg(&first, "correlation", corr);
      arg(&first, "device", int_col(s, c["deviceId"]));
      arg(&first, "stream", int_col(s, c["streamId"]));
      arg(&first, "bytes", int_col(s, c["bytes"]));
      arg(&first, "graph node id", int_col(s, c["graphNodeId"]));
      end_args(first);
    } else if (t == "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") {
      begin("X", "cuda_sync", "cudaSynchronize");
      times(start, end, false);
      id_field("pid", int_col(s, c["deviceId"]));
      id_field("tid", int_col(s, c["streamId"]));
      arg(&first, "correlation", corr);
      arg(&first, "sync type", int_col(s, c["syncType"]));
      end_args(first);
    } else if (t == "CUPTI_ACTIVITY_KIND_RUNTIME" || t == "CUPTI_ACTIVITY_KIND_DRIVER" || t == "OSRT_API") {
      const std::string_view original = str(int_col(s, c["nameId"]));
      const std::string_view name = canonical_api_name(original);
      const char* cat = t == "CUPTI_ACTIVITY_KIND_RUNTIME"  ? "cuda_runtime"
                        : t == "CUPTI_ACTIVITY_KIND_DRIVER" ? "cuda_driver"
                                                            : "os_runtime";
      if (t == "OSRT_API") ++counts_.osrt;
      begin("X", cat, name);
      times(start, end, false);
      thread_ids(s, c["globalTid"]);
      arg(&first, "correlation", corr);
      arg(&first, "return value", int_col(s, c["returnValue"]));
      if (name != original) arg_text(&first, "nsys_name", original);
      end_args(first);
    } else if (t == "NVTX_EVENTS") {
      nvtx_row(s, c, start, end);
    }
  }

  // NVTX_EVENTS rows are kept until the table is read: a range's level depends on the ranges around
  // it (nsys_nvtx_levels.h).
  struct NvtxRow {
    std::optional<int64_t> start, end, type, domain, range_id, global_tid;
    std::string text;
  };
  void nvtx_row(sqlite3_stmt* s, const Cols& c, std::optional<int64_t> start, std::optional<int64_t> end) {
    NvtxRow r;
    r.start = start;
    r.end = end;
    r.type = int_col(s, c["eventType"]);
    const int tc = c["text"];
    // 75: a domain's creation names it (nvtxDomainCreate); the ranges carry only its id.
    if (r.type == 75 && tc >= 0 && sqlite3_column_type(s, tc) == SQLITE_TEXT)
      if (const auto id = int_col(s, c["domainId"]))
        nvtx_domain_names_[*id] = reinterpret_cast<const char*>(sqlite3_column_text(s, tc));
    // 59: push/pop range, 60: start/end range, 34: mark; other types (domain and category
    // registration, thread names) carry no time extent.
    if (r.type != 34 && r.type != 59 && r.type != 60 && (r.type || !end)) return;
    if (tc >= 0 && sqlite3_column_type(s, tc) == SQLITE_TEXT)
      r.text = reinterpret_cast<const char*>(sqlite3_column_text(s, tc));
    if (r.text.empty()) r.text = std::string(str(int_col(s, c["textId"])));
    r.domain = int_col(s, c["domainId"]);
    r.range_id = int_col(s, c["rangeId"]);
    r.global_tid = int_col(s, c["globalTid"]);
    nvtx_.push_back(std::move(r));
  }
  void emit_nvtx() {
    std::vector<NvtxRange> ranges(nvtx_.size());
    for (size_t i = 0; i < nvtx_.size(); ++i) {
      const NvtxRow& r = nvtx_[i];
      if (r.type == 34) continue;  // marks are instants: no part in the nesting
      ranges[i] = {r.start, r.end, r.global_tid.value_or(0), r.text};
    }
    const std::vector<bool> model = nvtx_model_level(ranges);
    for (size_t i = 0; i < nvtx_.size(); ++i) {
      const NvtxRow& r = nvtx_[i];
      TorchNvtxName torch;
      if (r.type == 34) {
        begin("i", "user_annotation", r.text);
        times(r.start, r.end, true);
        out_->append(",\"s\":\"t\"");
      } else {
        // Model-level ranges keep Kineto's user_annotation (model level, ProfilerStep#N -> step).
        // PyTorch's emit_nvtx op ranges are named by their op, the call's details as args.
        if (model[i] || !parse_torch_nvtx_name(r.text, &torch)) {
          torch = TorchNvtxName();
          torch.op = r.text;
        }
        begin("X", model[i] ? "user_annotation" : "nvtx_layer", torch.op);
        times(r.start, r.end, false);
        ++(model[i] ? counts_.nvtx_model : counts_.nvtx_layer);
      }
      const int64_t g = r.global_tid.value_or(0);  // globalTid as in thread_ids()
      id_field("pid", (g >> 24) & 0xFFFFFF);
      id_field("tid", g & 0xFFFFFF);
      bool first = true;
      arg(&first, "nvtx domain", r.domain);
      if (const auto d = r.domain ? nvtx_domain_names_.find(*r.domain) : nvtx_domain_names_.end();
          d != nvtx_domain_names_.end())
        arg_text(&first, "nvtx domain name", d->second);
      arg(&first, "nvtx range id", r.range_id);
      arg(&first, kTorchSequenceNrKey, torch.sequence_nr);
      arg(&first, kTorchOpIdKey, torch.op_id);
      if (!torch.shapes.empty()) arg_text(&first, "Input Dims", torch.shapes);  // -> attr_keys::kShapes
      if (!torch.input_op_ids.empty()) arg_text(&first, kTorchInputOpIdsKey, torch.input_op_ids);
      end_args(first);
    }
    nvtx_.clear();
  }

  // Process and thread names: PROCESSES (3.x), ThreadNames (2.x) where present.
  void names() {
    std::unordered_map<int64_t, std::string> process_names;
    if (table_exists(db_, "PROCESSES") && has_column(db_, "PROCESSES", "pid") &&
        has_column(db_, "PROCESSES", "name")) {
      Stmt s;
      if (sqlite3_prepare_v2(db_, "SELECT pid, name FROM PROCESSES", -1, &s.handle, nullptr) == SQLITE_OK)
        while (sqlite3_step(s.handle) == SQLITE_ROW) {
          const auto pid = int_col(s.handle, 0);
          const unsigned char* n = sqlite3_column_text(s.handle, 1);
          if (pid && n) process_names[*pid & 0xFFFFFF] = reinterpret_cast<const char*>(n);
        }
    }
    for (const auto& [pid, name] : process_names) {
      metadata_event("process_name", pid, 0, name);
    }
    if (table_exists(db_, "ThreadNames") && has_column(db_, "ThreadNames", "nameId") &&
        has_column(db_, "ThreadNames", "globalTid")) {
      Stmt s;
      if (sqlite3_prepare_v2(db_, "SELECT globalTid, nameId FROM ThreadNames", -1, &s.handle, nullptr) ==
          SQLITE_OK)
        while (sqlite3_step(s.handle) == SQLITE_ROW) {
          const auto g = int_col(s.handle, 0);
          const std::string_view n = str(int_col(s.handle, 1));
          if (g && !n.empty()) metadata_event("thread_name", (*g >> 24) & 0xFFFFFF, *g & 0xFFFFFF, n);
        }
    }
  }
  void metadata_event(std::string_view what, int64_t pid, int64_t tid, std::string_view name) {
    begin("M", "__metadata", what);
    id_field("pid", pid);
    id_field("tid", tid);
    out_->append(",\"args\":{\"name\":");
    append_escaped(out_, name);
    out_->append("}}");
  }

  // Schema metadata (META_DATA_EXPORT in 3.x, EXPORT_META_DATA in 2.x) and the GPUs of
  // TARGET_INFO_GPU as Kineto-style deviceProperties (kept by the builder as device.<id>.<field>).
  void metadata() {
    for (const char* t : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
      if (!table_exists(db_, t) || !has_column(db_, t, "name") || !has_column(db_, t, "value")) continue;
      Stmt s;
      if (sqlite3_prepare_v2(db_, (std::string("SELECT name, value FROM ") + t).c_str(), -1, &s.handle,
                             nullptr) != SQLITE_OK)
        continue;
      while (sqlite3_step(s.handle) == SQLITE_ROW) {
        const unsigned char* n = sqlite3_column_text(s.handle, 0);
        const unsigned char* v = sqlite3_column_text(s.handle, 1);
        if (!n || !v) continue;
        const std::string_view key = reinterpret_cast<const char*>(n);
        const std::string_view value = reinterpret_cast<const char*>(v);
        // A schema newer than the 2.x and 3.x this reader was written against: one warning line, then
        // whatever tables and columns it still recognizes are imported.
        if (key == "EXPORT_SCHEMA_VERSION_MAJOR" && !value.empty() && (value.size() > 1 || value[0] > '3') &&
            !counts_.unknown_schema++)
          counts_.schema_major = value;
        out_->append(",");
        append_escaped(out_, std::string("nsys.") + reinterpret_cast<const char*>(n));
        out_->push_back(':');
        append_escaped(out_, reinterpret_cast<const char*>(v));
      }
      out_->append(",\"nsys.metadata_table\":");
      append_escaped(out_, t);
      break;
    }
    if (!table_exists(db_, "TARGET_INFO_GPU")) return;
    Stmt s;
    if (sqlite3_prepare_v2(db_, "SELECT * FROM TARGET_INFO_GPU", -1, &s.handle, nullptr) != SQLITE_OK) return;
    out_->append(",\"deviceProperties\":[");
    int n = 0;
    while (sqlite3_step(s.handle) == SQLITE_ROW && n < 64) {
      out_->append(n++ ? ",{" : "{");
      bool first_field = true;
      for (int i = 0; i < sqlite3_column_count(s.handle); ++i) {
        const int type = sqlite3_column_type(s.handle, i);
        if (type != SQLITE_INTEGER && type != SQLITE_TEXT && type != SQLITE_FLOAT) continue;
        if (!first_field) out_->push_back(',');
        first_field = false;
        std::string key = sqlite3_column_name(s.handle, i);
        append_escaped(out_, key);
        out_->push_back(':');
        if (type == SQLITE_INTEGER) {
          append_int(out_, sqlite3_column_int64(s.handle, i));
        } else if (type == SQLITE_FLOAT) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", sqlite3_column_double(s.handle, i));
          out_->append(buf);
        } else {
          append_escaped(out_, reinterpret_cast<const char*>(sqlite3_column_text(s.handle, i)));
        }
      }
      out_->push_back('}');
    }
    out_->push_back(']');
  }

  // Rank identity (issue 17): `nsys profile --trace=mpi` names the thread that initialized MPI "MPI
  // Rank N" (ThreadNames, and an NVTX thread-name event of type 39 in NVTX_EVENTS); the host is
  // TARGET_INFO_SYSTEM_ENV's Hostname. Written as Kineto's distributedInfo and host_name, so every
  // process gets its "rank" (and the main one its host) exactly as from a Kineto trace. A report
  // holding several ranks' processes gets no rank (one distributedInfo per file): nsys.rank_problem.
  void rank_hints() {
    std::map<int64_t, int64_t> rank_of_pid;
    const auto note = [&](std::optional<int64_t> g, std::string_view name) {
      constexpr std::string_view kPrefix = "MPI Rank ";
      int64_t rank = -1;
      if (!g || !name.starts_with(kPrefix)) return;
      const auto [end, ec] = std::from_chars(name.data() + kPrefix.size(), name.data() + name.size(), rank);
      if (ec == std::errc() && end == name.data() + name.size() && rank >= 0)
        rank_of_pid[(*g >> 24) & 0xFFFFFF] = rank;
    };
    for (const char* sql : {"SELECT globalTid, nameId, NULL FROM ThreadNames",
                            "SELECT globalTid, textId, text FROM NVTX_EVENTS WHERE eventType = 39"}) {
      Stmt s;
      if (sqlite3_prepare_v2(db_, sql, -1, &s.handle, nullptr) != SQLITE_OK)
        continue;  // table or column absent
      while (sqlite3_step(s.handle) == SQLITE_ROW) {
        const unsigned char* text = sqlite3_column_text(s.handle, 2);
        note(int_col(s.handle, 0), text ? reinterpret_cast<const char*>(text) : str(int_col(s.handle, 1)));
      }
    }
    std::set<int64_t> ranks;
    for (const auto& [pid, rank] : rank_of_pid) ranks.insert(rank);
    if (ranks.size() == 1) {
      out_->append(",\"distributedInfo\":{\"backend\":\"mpi\",\"rank\":");
      append_int(out_, *ranks.begin());
      out_->append("},\"nsys.rank_source\":");
      append_escaped(out_,
                     "thread name 'MPI Rank " + std::to_string(*ranks.begin()) + "' (nsys --trace=mpi)");
    } else if (ranks.size() > 1) {
      out_->append(",\"nsys.rank_problem\":");
      append_escaped(out_,
                     "threads named for " + std::to_string(ranks.size()) +
                         " MPI ranks in one report: ranks not imported; profile each rank to its own report");
    }
    Stmt host;
    if (sqlite3_prepare_v2(db_, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'", -1,
                           &host.handle, nullptr) == SQLITE_OK &&
        sqlite3_step(host.handle) == SQLITE_ROW && sqlite3_column_text(host.handle, 0)) {
      out_->append(",\"host_name\":");
      append_escaped(out_, reinterpret_cast<const char*>(sqlite3_column_text(host.handle, 0)));
    }
  }

  sqlite3* db_;
  const format::UntrustedSqlite& untrusted_;
  std::string source_;
  std::string* out_ = nullptr;
  std::unordered_map<int64_t, std::string> strings_;
  uint64_t events_ = 0;
  std::vector<NvtxRow> nvtx_;
  std::unordered_map<int64_t, std::string> nvtx_domain_names_;
  NsysCounts counts_;
  uint64_t max_json_;
};

class NsysSqliteReader final : public trace::TraceReader {
 public:
  std::string_view name() const override { return "nsys"; }
  std::string_view description() const override {
    return "Nsight Systems SQLite export (nsys export --type sqlite; schemas 2.x and 3.x)";
  }
  std::vector<std::string_view> formats() const override { return {"nsys", "nsys-sqlite", "sqlite"}; }
  int probe(const trace::ProbeInput& input) const override {
    return !input.is_directory && input.head.substr(0, kMagic.size()) == kMagic ? 100 : 0;
  }
  uint64_t memory_estimate(const trace::ProbeInput& input) const override { return input.size * 8; }
  bool read(const trace::ProbeInput& input, std::string_view, trace::TraceBuilder& builder,
            std::string* error) const override {
    return import_nsys_sqlite(input.path, builder, error, nullptr);
  }
};

}  // namespace

namespace {

bool translate(const std::string& path, std::string* json, std::string* error, NsysCounts* counts) {
  format::UntrustedSqliteOptions options;  // the defaults: tables only, a budget far above real exports' cost
  options.expected = "an Nsight Systems export";
  format::UntrustedSqlite db;
  if (!db.open(path, options, error)) {
    *error += "; export the report with `nsys export --type sqlite`";
    return false;
  }
  // The events may be at most the inflate ratio times the file, plus 16 MiB (format/input_file.h).
  const format::InflateLimits limits = format::inflate_limits();
  uint64_t max_json = limits.max_bytes;
  if (uint64_t scaled; !__builtin_mul_overflow(db.file_size(), limits.ratio, &scaled))
    max_json = std::min(max_json, scaled + (16u << 20));
  Translator translator(db, path, max_json);
  bool ok = translator.run(json, error);
  if (ok && db.out_of_budget()) {  // a lookup stopped early: the translation is incomplete
    *error = path + ": " + db.message();
    ok = false;
  }
  if (counts) *counts = translator.counts();
  return ok;
}

}  // namespace

bool import_nsys_sqlite(const std::string& path, trace::TraceBuilder& builder, std::string* error,
                        ImportStats* stats) {
  std::string json;
  NsysCounts counts;
  if (!translate(path, &json, error, &counts)) return false;
  ImportBuilder import_builder(&builder, Format::kKineto, path);
  // Counted by the translation, recorded with the converter's stats (import.nsys.*).
  if (counts.osrt) import_builder.note("nsys.osrt_untyped_calls", counts.osrt);
  if (counts.unknown_schema) {
    import_builder.note("nsys.unknown_schema_version", 1);
    builder.warn(
        path + ": Nsight Systems export schema major version " + counts.schema_major +
        " is newer than the 2.x/3.x this reader knows; importing the tables and columns it recognizes");
  }
  if (counts.nvtx_model) import_builder.note("nsys.nvtx_model_ranges", counts.nvtx_model);
  if (counts.nvtx_layer) import_builder.note("nsys.nvtx_layer_ranges", counts.nvtx_layer);
  return convert_kineto(json, import_builder, stats, error);
}

void register_nsys_reader() { trace::register_reader(std::make_unique<NsysSqliteReader>()); }

}  // namespace strata::import
