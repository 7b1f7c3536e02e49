#include "export/sqlite_export.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "core/activity_type.h"
#include "core/level.h"
#include "profile/profile.h"
#include "symbolize/symbolizer.h"
#include "trace/span_tree.h"
#include "trace/tracks.h"

namespace strata::exporter {
namespace {

// The tables, then the readable views. Indexes come after the rows (kIndexes): building them once
// over sorted data is several times faster than maintaining them row by row. Only the join keys
// (parent, span of an attribute or metric, span id of a sample) and the usual filters (name, level
// and start) are indexed: each index costs export time and file size (docs/performance.md).
constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE levels(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE processes(id INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, host TEXT, command_line TEXT,
  trace_id TEXT, start_realtime_ns INTEGER, start_monotonic_ns INTEGER, span_count INTEGER, ended_cleanly INTEGER);
CREATE TABLE process_properties(process INTEGER, key TEXT, value TEXT);
CREATE TABLE threads(process INTEGER, tid INTEGER, name TEXT, PRIMARY KEY(process, tid));
CREATE TABLE tracks(id INTEGER PRIMARY KEY, process INTEGER, device INTEGER, stream INTEGER, tid INTEGER,
  rank INTEGER, label TEXT, span_count INTEGER);
CREATE TABLE span_table(id INTEGER PRIMARY KEY, span_id INTEGER, parent INTEGER, link TEXT, depth INTEGER,
  name_id INTEGER NOT NULL, level_id INTEGER, kind TEXT, activity TEXT, process INTEGER, tid INTEGER,
  track INTEGER, device INTEGER, stream INTEGER, correlation_id INTEGER, recorded_parent_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, dur_ns INTEGER, flags INTEGER);
CREATE TABLE attribute_table(span INTEGER, key_id INTEGER, int_value INTEGER, real_value REAL, string_id INTEGER);
CREATE TABLE metric_table(span INTEGER, key_id INTEGER, value REAL);
CREATE TABLE frames(id INTEGER PRIMARY KEY, function TEXT, module TEXT, file TEXT, line INTEGER, python INTEGER);
CREATE TABLE stack_frames(stack INTEGER, position INTEGER, frame INTEGER, PRIMARY KEY(stack, position));
CREATE TABLE sample_counts(process INTEGER, tid INTEGER, stack INTEGER, span_id INTEGER, event TEXT,
  epoch INTEGER, count INTEGER);
CREATE TABLE sample_points(process INTEGER, tid INTEGER, time_ns INTEGER, stack INTEGER, event TEXT,
  weight INTEGER, span_id INTEGER);
CREATE VIEW spans AS SELECT s.id, s.span_id, n.value AS name, l.name AS level, s.level_id, s.kind,
  s.activity, s.parent, s.link, s.depth, s.process, s.tid, s.track, s.device, s.stream, s.correlation_id,
  s.recorded_parent_id, s.start_ns, s.end_ns, s.dur_ns, s.flags
  FROM span_table s JOIN strings n ON n.id = s.name_id LEFT JOIN levels l ON l.id = s.level_id;
CREATE VIEW attributes AS SELECT a.span, k.value AS key,
  COALESCE(a.int_value, a.real_value, v.value) AS value
  FROM attribute_table a JOIN strings k ON k.id = a.key_id LEFT JOIN strings v ON v.id = a.string_id;
CREATE VIEW metrics AS SELECT m.span, k.value AS key, m.value
  FROM metric_table m JOIN strings k ON k.id = m.key_id;
)sql";

constexpr const char* kIndexes = R"sql(
CREATE INDEX span_parent ON span_table(parent);
CREATE INDEX span_name ON span_table(name_id);
CREATE INDEX span_level_start ON span_table(level_id, start_ns);
CREATE INDEX span_span_id ON span_table(process, span_id);
CREATE INDEX attribute_span ON attribute_table(span);
CREATE INDEX metric_span ON metric_table(span);
CREATE INDEX sample_count_span ON sample_counts(process, span_id);
CREATE INDEX sample_point_span ON sample_points(process, span_id);
)sql";

// SQLite's message, and for a failed write the system's reason ("database or disk is full: No space
// left on device").
std::string sqlite_error(sqlite3* db, const char* message = nullptr) {
  std::string text = std::string("sqlite: ") + (message ? message : sqlite3_errmsg(db));
  const int code = sqlite3_errcode(db) & 0xFF;
  const bool system = code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_CANTOPEN;
  int number = sqlite3_system_errno(db);
  if (code == SQLITE_FULL && number == 0) number = ENOSPC;  // SQLite says "full" only for ENOSPC
  if (system && number != 0) text += std::string(": ") + std::strerror(number);
  return text;
}

// A prepared INSERT: bind the columns in order, then insert().
class Insert {
 public:
  Insert(sqlite3* db, const char* sql, std::string* error) : db_(db), error_(error) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail();
  }
  ~Insert() { sqlite3_finalize(stmt_); }
  Insert(const Insert&) = delete;
  Insert& operator=(const Insert&) = delete;

  Insert& i64(int64_t v) {
    sqlite3_bind_int64(stmt_, ++col_, v);
    return *this;
  }
  // Unsigned ids (span ids, correlation ids) keep their 64 bits as a signed INTEGER.
  Insert& u64(uint64_t v) { return i64(static_cast<int64_t>(v)); }
  Insert& real(double v) {
    sqlite3_bind_double(stmt_, ++col_, v);
    return *this;
  }
  Insert& text(std::string_view v) {
    // An empty view may have no data pointer, which SQLite would store as NULL, not ''.
    sqlite3_bind_text(stmt_, ++col_, v.data() != nullptr ? v.data() : "", static_cast<int>(v.size()),
                      SQLITE_TRANSIENT);
    return *this;
  }
  Insert& null() {
    sqlite3_bind_null(stmt_, ++col_);
    return *this;
  }
  bool insert() {
    col_ = 0;
    if (!ok_) return false;
    const int rc = sqlite3_step(stmt_);
    sqlite3_reset(stmt_);
    if (rc != SQLITE_DONE) fail();
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  void fail() {
    if (ok_) *error_ = sqlite_error(db_);
    ok_ = false;
  }
  sqlite3* db_;
  std::string* error_;
  sqlite3_stmt* stmt_ = nullptr;
  int col_ = 0;
  bool ok_ = true;
};

bool exec(sqlite3* db, const char* sql, std::string* error) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return true;
  *error = sqlite_error(db, message);
  sqlite3_free(message);
  return false;
}

bool write_strings(const trace::Trace& trace, sqlite3* db, std::string* error) {
  Insert ins(db, "INSERT INTO strings VALUES(?,?)", error);
  for (uint32_t id = 0; id < trace.strings.size() && ins.ok(); ++id) ins.i64(id).text(trace.strings.get(id)).insert();
  Insert levels(db, "INSERT INTO levels VALUES(?,?)", error);
  for (int level = 0; level < 256 && levels.ok(); ++level) {
    const std::string name = level_name(static_cast<uint8_t>(level));
    if (name.rfind("level(", 0) != 0) levels.i64(level).text(name).insert();
  }
  return ins.ok() && levels.ok();
}

bool write_processes(const trace::Trace& trace, sqlite3* db, std::string* error) {
  Insert proc(db, "INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?)", error);
  Insert prop(db, "INSERT INTO process_properties VALUES(?,?,?)", error);
  Insert thread(db, "INSERT INTO threads VALUES(?,?,?)", error);
  std::set<std::pair<uint16_t, uint32_t>> threads;
  for (const SpanRecord& s : trace.spans)
    if (!trace::track_key(s).on_device()) threads.emplace(s.process, s.tid);
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    const trace::Process& pr = trace.processes[p];
    proc.i64(static_cast<int64_t>(p)).i64(pr.pid).i64(pr.ppid).text(pr.host).text(pr.command_line);
    proc.text(pr.trace_id).i64(pr.start_realtime_ns).i64(pr.start_monotonic_ns).u64(pr.span_count);
    proc.i64(pr.ended_cleanly ? 1 : 0).insert();
    for (const auto& [key, value] : pr.properties.entries()) prop.i64(static_cast<int64_t>(p)).text(key).text(value).insert();
    for (const auto& [tid, name] : pr.thread_names) threads.emplace(static_cast<uint16_t>(p), tid);
  }
  for (const auto& [p, tid] : threads) {
    const auto& names = trace.processes[p].thread_names;
    auto it = names.find(tid);
    thread.i64(p).i64(tid);
    if (it != names.end()) thread.text(it->second);
    else thread.null();
    thread.insert();
  }
  return proc.ok() && prop.ok() && thread.ok();
}

bool write_tracks(const trace::Trace& trace, sqlite3* db, std::string* error) {
  const trace::TrackTable& tracks = trace.tracks();
  Insert ins(db, "INSERT INTO tracks VALUES(?,?,?,?,?,?,?,?)", error);
  for (uint32_t t = 0; t < tracks.size() && ins.ok(); ++t) {
    const trace::Track& track = tracks[t];
    ins.i64(t).i64(track.key.process);
    if (track.key.device != kNoDevice) ins.i64(track.key.device);
    else ins.null();
    if (track.key.stream != kNoStream) ins.i64(track.key.stream);
    else ins.null();
    if (track.key.on_device()) ins.null();
    else ins.i64(track.key.tid);
    if (track.rank >= 0) ins.i64(track.rank);
    else ins.null();
    ins.text(tracks.label(trace, t)).i64(track.span_count).insert();
  }
  return ins.ok();
}

bool write_spans(const trace::Trace& trace, sqlite3* db, std::string* error) {
  const trace::SpanTree& tree = trace.tree();
  const trace::TrackTable& tracks = trace.tracks();
  Insert span(db, "INSERT INTO span_table VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", error);
  Insert attr(db, "INSERT INTO attribute_table VALUES(?,?,?,?,?)", error);
  Insert metric(db, "INSERT INTO metric_table VALUES(?,?,?)", error);
  // Kind and activity names are a handful of values: named once, not per span.
  std::vector<std::string> kind_names(256), activity_names(256);
  for (int v = 0; v < 256; ++v) {
    kind_names[v] = kind_name(static_cast<uint8_t>(v));
    activity_names[v] = activity_name(static_cast<uint8_t>(v));
  }
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const int64_t row = static_cast<int64_t>(i);
    span.i64(row).u64(s.span_id);
    if (tree.parent(i) == trace::kNoParent)
      span.null().null();
    else
      span.i64(tree.parent(i)).text(trace::link_kind_name(tree.link(i)));
    span.i64(tree.depth(i)).i64(s.name).i64(s.level).text(kind_names[s.kind]).text(activity_names[s.activity]);
    span.i64(s.process);
    if (trace::track_key(s).on_device())
      span.null();
    else span.i64(s.tid);
    span.i64(tracks.track_of(s));
    if (s.device != kNoDevice) span.i64(s.device);
    else span.null();
    if (s.stream != kNoStream) span.i64(s.stream);
    else span.null();
    if (s.correlation_id) span.u64(s.correlation_id);
    else span.null();
    if (s.parent_id) span.u64(s.parent_id);
    else span.null();
    span.i64(s.start_ns).i64(s.end_ns).i64(s.duration_ns()).i64(s.flags);
    if (!span.insert()) return false;
    for (const AttrRecord& a : trace.attributes(i)) {
      switch (static_cast<AttrType>(a.type)) {
        case AttrType::kMetric: metric.i64(row).i64(a.key).real(a.value.d).insert(); break;
        case AttrType::kInt: attr.i64(row).i64(a.key).i64(a.value.i).null().null().insert(); break;
        case AttrType::kDouble: attr.i64(row).i64(a.key).null().real(a.value.d).null().insert(); break;
        case AttrType::kString: attr.i64(row).i64(a.key).null().null().u64(a.value.u).insert(); break;
        default: break;  // an unknown attribute type from a newer writer: the JSON export shows it raw
      }
    }
    if (!attr.ok() || !metric.ok()) return false;
  }
  return true;
}

std::string event_name(const std::vector<std::string>& names, uint32_t event) {
  return event < names.size() ? names[event] : "event " + std::to_string(event);
}

bool write_samples(const trace::Trace& trace, sqlite3* db, std::string* error) {
  const trace::SampleData& samples = trace.samples;
  if (samples.empty()) return true;
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  Insert frame(db, "INSERT INTO frames VALUES(?,?,?,?,?,?)", error);
  for (uint32_t f = 0; f < samples.frames.size() && frame.ok(); ++f) {
    const profile::FrameName& n = namer.name(f);
    frame.i64(f).text(n.function).text(n.module).text(n.file).i64(n.line).i64(n.python ? 1 : 0).insert();
  }
  Insert stack(db, "INSERT INTO stack_frames VALUES(?,?,?)", error);
  for (uint32_t s = 0; s < samples.stack_count() && stack.ok(); ++s) {
    int64_t position = 0;
    for (uint32_t f : samples.stack(s)) stack.i64(s).i64(position++).i64(f).insert();
  }
  std::map<uint16_t, std::vector<std::string>> events;
  auto events_of = [&](uint16_t process) -> const std::vector<std::string>* {
    auto it = events.find(process);
    if (it == events.end()) it = events.emplace(process, samples.events(process)).first;
    return &it->second;
  };
  Insert count(db, "INSERT INTO sample_counts VALUES(?,?,?,?,?,?,?)", error);
  for (const trace::SampleCount& c : samples.counts) {
    count.i64(c.process).i64(c.tid).i64(c.stack).u64(c.span_id);
    count.text(event_name(*events_of(c.process), c.event)).i64(c.epoch).u64(c.count);
    if (!count.insert()) return false;
  }
  Insert point(db, "INSERT INTO sample_points VALUES(?,?,?,?,?,?,?)", error);
  for (const trace::SamplePoint& p : samples.timeline) {
    point.i64(p.process).i64(p.tid).i64(p.time_ns).i64(p.stack);
    point.text(event_name(*events_of(p.process), p.event)).i64(p.weight).u64(p.span_id);
    if (!point.insert()) return false;
  }
  return frame.ok() && stack.ok();
}

bool write_meta(const trace::Trace& trace, sqlite3* db, std::string* error) {
  Insert ins(db, "INSERT OR REPLACE INTO meta VALUES(?,?)", error);
  ins.text("schema_version").text(std::to_string(kSqliteSchemaVersion)).insert();
  ins.text("span_count").text(std::to_string(trace.spans.size())).insert();
  for (const auto& [key, value] : trace.record.entries()) ins.text("record." + key).text(value).insert();
  return ins.ok();
}

}  // namespace

bool write_sqlite(const trace::Trace& trace, sqlite3* db, std::string* error) {
  // One transaction, no rollback journal: the file is new and is discarded on failure anyway.
  if (!exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;", error)) return false;
  if (!exec(db, "BEGIN", error) || !exec(db, kSchema, error)) return false;
  const bool ok = write_meta(trace, db, error) && write_strings(trace, db, error) &&
                  write_processes(trace, db, error) && write_tracks(trace, db, error) &&
                  write_spans(trace, db, error) && write_samples(trace, db, error) && exec(db, kIndexes, error);
  if (!ok) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return false;
  }
  return exec(db, "COMMIT", error);
}

std::vector<std::string> sqlite_view_definitions() {
  std::vector<std::string> views;
  const std::string_view schema = kSchema;
  for (size_t begin = 0; begin < schema.size();) {
    const size_t end = std::min(schema.find(';', begin), schema.size());
    std::string_view statement = schema.substr(begin, end - begin);
    statement.remove_prefix(std::min(statement.find_first_not_of(" \n"), statement.size()));
    if (statement.starts_with("CREATE VIEW ")) views.emplace_back(statement);
    begin = end + 1;
  }
  return views;
}

bool write_sqlite_file(const trace::Trace& trace, const std::string& path, std::string* error) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    *error = std::string("cannot open as SQLite database: ") + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return false;
  }
  const bool ok = write_sqlite(trace, db, error);
  if (sqlite3_close(db) != SQLITE_OK && ok) {
    *error = "cannot close the database";
    return false;
  }
  return ok;
}

}  // namespace strata::exporter
