// A recording session in one process: per-thread event buffers (producers), one background writer
// thread (consumer) that turns events into spans and appends chunks to the process's trace file.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "collect/block_pool.h"
#include "collect/clock.h"
#include "collect/events.h"
#include "collect/trace_context.h"
#include "core/activity_type.h"
#include "core/span_record.h"
#include "format/chunk_writer.h"
#include "format/stream_writer.h"

namespace strata::collect {

struct SessionConfig {
  // How the trace file is opened: created or truncated (an explicit path), created new without
  // following links (a per-process file in a parts directory: on a name clash "-1", "-2", ... is
  // added before ".strata"), or appended to (a process that owns an output file and exec'd itself).
  enum class OpenMode { kTruncate, kCreateNew, kAppend };
  std::string path;                 // trace file to create
  OpenMode open_mode = OpenMode::kTruncate;
  int level = 20;                   // deepest level recorded (strata::Level value)
  size_t buffer_bytes = 64u << 20;  // all per-thread event buffers together
  // Under a burst the buffers may grow up to this (then shrink back); 0 or less than buffer_bytes:
  // buffer_bytes is a hard budget. From the environment: STRATA_BUFFER_MB set is a hard budget;
  // unset, 64 MiB growing up to STRATA_BUFFER_MAX_MB (default min(512 MiB, RAM / 16)).
  size_t buffer_max_bytes = 0;
  int drain_interval_ms = 10;       // how often the writer empties thread buffers
  int flush_interval_ms = 100;      // how often it appends chunks to the file (crash safety)
  int compression_level = 0;        // zstd level; 0 stores chunks uncompressed
  std::optional<TraceContext> context;  // inherited trace context; a new trace when absent
  std::string argv;                 // NUL-separated command line, for the header
};

// Disk kept allocated past the end of a process's trace file for the chunks that close it (its
// drop counts and End chunk): when the file system fills up, those still reach the file.
inline constexpr uint64_t kCloseReserveBytes = 256 * 1024;

// Why events were dropped. Each is a stat of the registry (core/stats.h: collector.<cause>), written
// into the trace under the registry's on-disk key ("dropped.<cause>").
enum DropCause : int {
  kDropBufferFull = 0,   // no buffer space: the event was never recorded
  kDropEndLost,          // a span whose end could not be recorded (written as unfinished)
  kDropUnmatchedEnd,     // an end with no open span
  kDropAttrNoSpan,       // an attribute for a span that is not open
  kDropStringTruncated,  // a string longer than the event limit was cut (the event is kept)
  kDropWriteFailed,      // the trace file could not be written
  kDropCorruptBuffer,    // an unreadable event in a thread buffer (a bug; the rest of the batch is lost)
  kDropCauseCount,
};
// The registry's on-disk key of a cause ("dropped.buffer_full").
std::string_view drop_cause_key(int cause);

struct ThreadState;
struct OpenSpan;

// A span's times as a collector riding on the writer thread sees them (the CPU sampler joins its
// samples with them by thread and time). Times on the writer's ns scale.
struct SpanTimes {
  uint32_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // INT64_MAX while open
  uint64_t span_id = 0;
};

// A collector that works on the writer thread (src/sample's CPU sampler): it sees the spans the
// writer pairs, to attribute its samples to the span open on their thread, and appends its own
// chunks to the stream. Collectors never include the model or analyses; this is their only view.
class WriterPlugin {
 public:
  virtual ~WriterPlugin() = default;
  // After each drain: spans closed since the last call and those open now; every thread's events
  // before `complete_before_ns` have been read; monotonic = writer ns + `to_monotonic`.
  virtual void after_drain(std::span<const SpanTimes> closed, std::span<const SpanTimes> open,
                           int64_t complete_before_ns, int64_t to_monotonic) = 0;
  // At every flush (every 100 ms), and once more when the session stops (`final`).
  virtual void write(format::StreamWriter& stream, bool final) = 0;
};

// One attribute or metric handed over by a collector with a complete span.
struct AttrDraft {
  std::string_view key;
  AttrType type = AttrType::kInt;
  int64_t i = 0;
  double d = 0;
  std::string_view s;
};

class Session {
 public:
  explicit Session(SessionConfig config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens the file and starts the writer thread. On failure returns false with error() set.
  bool start();
  // Drains every buffer, writes the end of the stream and closes the file.
  void stop();
  // Wakes the writer and waits until everything recorded before the call is in the file.
  void flush();

  // Producer side (any thread).
  uint64_t begin(std::string_view name, int level, ActivityType activity = ActivityType::kAnnotation);
  void end(uint64_t span_id);
  void set_attr(uint64_t span_id, std::string_view key, AttrType type, int64_t i, double d, std::string_view s);
  // Several integer attributes of one span with one buffer reservation (tracers that set many).
  void set_int_attrs(uint64_t span_id, const char* const* keys, const int64_t* values, size_t count);
  void instant(std::string_view name, int level);
  void counter(std::string_view name, double value);
  void set_thread_name(std::string_view name);
  // A whole span from a collector (CUPTI activity, imported records): name and attributes copied.
  void emit_complete(const SpanRecord& record, std::string_view name, std::span<const AttrDraft> attrs);
  bool begin_static_slow(const detail::SourceLocation* loc);
  void end_static_slow();
  uint64_t current_api_span();  // innermost open API span of the calling thread, or the root parent
  // For collectors with their own loss counters (e.g. CUPTI's dropped records): the cumulative count
  // is written with the session's drops as "dropped.<cause>", so summaries and `strata info` show it.
  void set_collector_drops(std::string_view cause, uint64_t total);
  // Facts about a collector (e.g. its clock source), written as stats property "collector.<key>".
  void set_collector_property(std::string_view key, std::string_view value);

  // A tick reading (detail::now_ticks) on this session's monotonic ns scale, for collectors that
  // stamp events themselves and hand them over with emit_complete (flag them kSpanFlagFromTicks).
  int64_t ticks_to_ns(uint64_t ticks) const { return clock_.to_ns(ticks); }
  const TraceContext& context() const { return context_; }
  // The process that started the session (a vfork child shares the parent's memory, not its session).
  int owner_pid() const { return owner_pid_; }
  // In a forked child, before anything else runs: the innermost API span the forking thread had
  // open in the parent (or the parent's own parent), to hang the child's spans under. Takes no lock.
  uint64_t span_open_at_fork() const;
  // Called (once per thread) when a thread records its first event; the runtime installs its
  // terminate-signal handlers from there.
  static void set_thread_registered_hook(void (*hook)());
  const SessionConfig& config() const { return config_; }
  const std::string& error() const { return error_; }
  uint64_t drops(int cause) const;
  uint64_t spans_written() const { return spans_written_.load(std::memory_order_relaxed); }

  // The writer thread's plugin (null: none). Set from any thread; the writer picks it up at its next
  // drain. The plugin must outlive the session's writer (it is called until stop() returns).
  void set_writer_plugin(WriterPlugin* plugin) { plugin_.store(plugin, std::memory_order_release); }
  // The writer thread's id (0 before it runs): samplers leave the recorder's own threads out.
  uint32_t writer_tid() const { return writer_tid_.load(std::memory_order_acquire); }
  // Called with every session that starts (after its writer runs): the sampler starts with the
  // session of a forked child that way. One hook per process.
  static void set_start_hook(void (*hook)(Session*));

  // Test hook: while paused the writer does not drain buffers (to force buffer exhaustion).
  void pause_writer_for_testing(bool paused);

  void on_thread_exit(ThreadState* state);

 private:
  friend struct ThreadState;
  ThreadState* thread_state();
  ThreadState* calling_thread_state();  // without registering
  ThreadState* register_thread();
  // Reserves `count` contiguous slots in the calling thread's buffer (after writing any deferred
  // ends), or null: the drop is counted, except for ends, which the caller defers.
  detail::Slot* reserve(ThreadState* t, uint32_t count, int drop_cause);
  bool switch_block(ThreadState* t);
  void defer_end(ThreadState* t, uint64_t ticks, uint64_t span_id);
  bool write_deferred(ThreadState* t);
  void commit(ThreadState* t, detail::Slot* after);
  uint64_t new_api_id(ThreadState* t);
  void hand_off_end(ThreadState* t, uint64_t span_id, uint64_t ticks);
  void take_mail(ThreadState* t);
  static void erase_from_api_stack(ThreadState* t, uint64_t span_id);

  void writer_loop();
  void drain_all();
  // Reads the thread's events up to (limit, limit_pos) (everything when limit is null).
  void drain_thread(ThreadState& t, const Block* limit = nullptr, uint32_t limit_pos = 0);
  void take_handoff_ends();
  void process_events(ThreadState& t, const detail::Slot* slots, uint32_t count);
  bool process_other_event(ThreadState& t, uint64_t tag, const detail::Slot& head, const detail::Slot* x,
                           uint32_t extra, uint32_t aux, uint64_t* emitted);
  void append_span(uint64_t id, uint64_t parent, int64_t start, int64_t end, uint32_t name, uint8_t level,
                   uint8_t kind, std::span<const AttrRecord> attrs, uint32_t tid, ActivityType activity);
  uint64_t parent_of_new(const ThreadState& t) const;
  void emit_open(const ThreadState& owner, const OpenSpan& o, int64_t end_ns, uint8_t flags);
  void close_innermost_static(ThreadState& t, int64_t end_ns, uint8_t flags);
  void end_api_span(uint64_t span_id, int64_t end_ns);
  void close_known_ends(ThreadState& t, int64_t now_ns);
  void apply_deferred_ends(ThreadState& t, const detail::Slot* entries, uint32_t n, uint32_t overflow,
                           uint64_t overflow_ticks);
  void finish_open_spans(ThreadState& t);
  void write_header();
  // `final`: the last one, at stop. While the disk is full (ChunkWriter::space_low) only the first
  // and the final one are written: the space kept past the file's end is for the end of the stream.
  void write_stats(bool final = false);
  void write_clock_snapshot();

  bool open_file();

  SessionConfig config_;
  TraceContext context_;
  int owner_pid_ = 0;
  uint64_t id_salt_ = 0;
  std::string error_;
  BlockPool pool_;
  TickClock clock_;

  std::mutex threads_mu_;
  std::vector<ThreadState*> threads_;
  std::vector<std::unique_ptr<ThreadState>> owned_threads_;
  uint32_t next_thread_index_ = 0;

  std::thread writer_;
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  std::condition_variable flushed_cv_;
  bool stop_requested_ = false;
  uint64_t flush_requests_ = 0;
  uint64_t flushes_done_ = 0;
  std::atomic<bool> paused_{false};
  std::atomic<bool> drain_soon_{false};  // a producer found the pool more than half used
  std::atomic<bool> stopped_{false};  // read by producers without the lock

  // Writer-thread state.
  format::ChunkWriter file_;
  std::unique_ptr<format::StreamWriter> stream_;
  std::unordered_map<const detail::SourceLocation*, uint32_t> location_names_;
  struct OpenRef {
    ThreadState* owner;
  };
  std::unordered_map<uint64_t, OpenRef> open_api_spans_;
  std::unordered_map<uint64_t, int64_t> early_ends_;  // ends seen before their begin (other thread)
  std::mutex handoff_mu_;  // producers ending another thread's span -> writer
  std::vector<detail::Slot> handoff_ends_;  // {ticks, span id}
  std::atomic<uint64_t> consumer_drops_[kDropCauseCount] = {};
  std::atomic<uint64_t> spans_written_{0};
  std::vector<std::pair<uint32_t, std::string>> thread_names_;
  int64_t last_flush_ns_ = 0;
  int64_t last_snapshot_ns_ = 0;
  uint64_t stats_written_hash_ = 0;
  bool low_space_stats_written_ = false;
  uint64_t unfinished_spans_ = 0;
  std::atomic<WriterPlugin*> plugin_{nullptr};
  std::atomic<uint32_t> writer_tid_{0};
  std::vector<SpanTimes> plugin_closed_;  // writer thread: spans closed since the plugin's last drain
  void note_closed(uint32_t tid, int64_t start, int64_t end, uint64_t id) {
    if (plugin_.load(std::memory_order_relaxed) != nullptr) plugin_closed_.push_back({tid, start, end, id});
  }
  void plugin_after_drain(int64_t complete_before_ns);
  std::mutex collector_mu_;  // collectors report from their own threads
  std::vector<std::pair<std::string, uint64_t>> collector_drops_;
  std::vector<std::pair<std::string, std::string>> collector_properties_;
};

// The process's current session (null when not recording). Set by the runtime entry points.
Session* current_session();

}  // namespace strata::collect
