#include "collect/session.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <new>

#include "collect/session_internal.h"
#include "core/level.h"
#include "core/stats.h"
#include "format/payloads.h"

namespace strata::collect {

namespace {

// Each cause is a stat of the one registry (core/stats.h), which holds its on-disk key and meaning.
constexpr stats::Stat kDropCauseStats[kDropCauseCount] = {
    stats::Stat::kCollectorBufferFull,       stats::Stat::kCollectorEndLost,
    stats::Stat::kCollectorUnmatchedEnd,     stats::Stat::kCollectorAttrWithoutSpan,
    stats::Stat::kCollectorStringTruncated,  stats::Stat::kCollectorWriteFailed,
    stats::Stat::kCollectorCorruptBuffer,
};

uint32_t current_tid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

}  // namespace

std::string_view drop_cause_key(int cause) {
  return cause >= 0 && cause < kDropCauseCount ? stats::info(kDropCauseStats[cause]).disk_key : "dropped.unknown";
}

namespace {
thread_local ThreadState* tls_state = nullptr;
std::atomic<void (*)()> g_thread_registered_hook{nullptr};
std::atomic<void (*)(Session*)> g_session_start_hook{nullptr};
pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit_key(void* arg) {
  auto* state = static_cast<ThreadState*>(arg);
  if (state != nullptr && state->session != nullptr) state->session->on_thread_exit(state);
}
}  // namespace

Session::Session(SessionConfig config)
    : config_(std::move(config)),
      pool_(std::max<size_t>(2, config_.buffer_bytes / kBlockBytes),
            std::max<size_t>(2, std::max(config_.buffer_bytes, config_.buffer_max_bytes) / kBlockBytes)) {
  context_ = config_.context.value_or(new_trace_context());
  id_salt_ = random_u64() & 0xFFF;
}

Session::~Session() {
  stop();
  // The runtime keeps its session for the life of the process; a session object that goes away
  // (a test's, an embedder's) gives the blocks its threads still hold back to the pool, whose
  // destructor frees them: nothing else points at them once the thread states are gone.
  std::lock_guard<std::mutex> lock(threads_mu_);
  for (auto& t : owned_threads_) {
    std::lock_guard<std::mutex> chain(t->chain_mu);
    for (Block* first : {t->read_block, t->head})
      for (Block* b = first; b != nullptr;) {
        Block* next = b->next.load(std::memory_order_acquire);
        pool_.release(b);
        b = next;
      }
    t->read_block = t->head = t->write_block = nullptr;
  }
}

uint64_t Session::drops(int cause) const {
  uint64_t total = consumer_drops_[cause].load(std::memory_order_relaxed);
  // Producer-side counters live in thread states, which are only added, never removed, while the
  // session lives.
  auto* self = const_cast<Session*>(this);
  std::lock_guard<std::mutex> lock(self->threads_mu_);
  for (const auto& t : owned_threads_) total += t->drops[cause].load(std::memory_order_relaxed);
  return total;
}

bool Session::open_file() {
  switch (config_.open_mode) {
    case SessionConfig::OpenMode::kTruncate:
      return file_.open(config_.path);
    case SessionConfig::OpenMode::kAppend:
      return file_.open_append(config_.path);
    case SessionConfig::OpenMode::kCreateNew: {
      std::string base = config_.path;
      std::string ext;
      if (base.size() > 7 && base.compare(base.size() - 7, 7, ".strata") == 0) {
        ext = ".strata";
        base.resize(base.size() - 7);
      }
      for (int attempt = 0; attempt < 1000; ++attempt) {
        std::string candidate = attempt == 0 ? config_.path : base + "-" + std::to_string(attempt) + ext;
        bool exists = false;
        if (file_.open_new(candidate, &exists)) {
          config_.path = candidate;
          return true;
        }
        if (!exists) return false;  // another reason than a name clash
      }
      return false;
    }
  }
  return false;
}

bool Session::start() {
  owner_pid_ = static_cast<int>(getpid());
  if (!open_file()) {
    error_ = file_.error();
    return false;
  }
  file_.keep_reserve(kCloseReserveBytes);
  stream_ = std::make_unique<format::StreamWriter>(&file_, random_u64(), config_.compression_level);
  clock_.calibrate(2'000'000);  // 2 ms: refined at the end (see write_stats)
  write_header();
  write_clock_snapshot();
  stream_->flush();
  last_flush_ns_ = monotonic_ns();
  last_snapshot_ns_ = last_flush_ns_;
  pthread_once(&g_exit_key_once, [] { pthread_key_create(&g_exit_key, on_thread_exit_key); });
  // The writer blocks every signal (it inherits the mask it is created with): a process-directed
  // signal then goes to a program thread, whose handler may wait for the writer to flush.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  writer_ = std::thread([this] { writer_loop(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (auto hook = g_session_start_hook.load(std::memory_order_acquire)) hook(this);
  return true;
}

void Session::set_start_hook(void (*hook)(Session*)) { g_session_start_hook.store(hook, std::memory_order_release); }

namespace {

// The first of the launcher variables that is set and not empty.
const char* first_env(std::initializer_list<const char*> names, const char** which) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      *which = name;
      return v;
    }
  }
  return nullptr;
}

// A decimal integer >= 0, as launchers write ranks and sizes.
bool is_count(const char* v) {
  if (*v == '\0' || std::strlen(v) > 9) return false;
  for (const char* c = v; *c; ++c)
    if (*c < '0' || *c > '9') return false;
  return true;
}

// The process's place in a multi-rank job, as torchrun, SLURM and MPI launchers state it: rank,
// local_rank, world_size and job_id properties (the loader's rank column and `strata merge` read
// them), each with the variable it came from. Values that are not integers are not written.
void write_rank_identity(format::Properties* p) {
  struct Field {
    const char* key;
    std::initializer_list<const char*> vars;
    bool integer;
  };
  static const Field kFields[] = {
      {"rank", {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, true},
      {"local_rank", {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, true},
      {"world_size", {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, true},
      {"job_id", {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}, false},
  };
  for (const Field& f : kFields) {
    const char* which = nullptr;
    const char* v = first_env(f.vars, &which);
    if (v == nullptr || (f.integer && !is_count(v))) continue;
    p->set(f.key, std::string(v).substr(0, 256));
    p->set(std::string(f.key) + ".source", which);
  }
}

}  // namespace

void Session::write_header() {
  format::Properties p;
  namespace k = format::keys;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  char exe[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  p.set_int(std::string(k::kPid), getpid());
  p.set_int(std::string(k::kPpid), getppid());
  p.set(std::string(k::kHost), host);
  p.set(std::string(k::kExe), n > 0 ? std::string(exe, static_cast<size_t>(n)) : "");
  p.set(std::string(k::kArgv), config_.argv);
  p.set(std::string(k::kTraceId), context_.trace_id_hex());
  if (context_.parent_span_id != 0) p.set(std::string(k::kParentSpanId), hex16(context_.parent_span_id));
  p.set_int(std::string(k::kStartRealtimeNs), realtime_ns());
  p.set_int(std::string(k::kStartMonotonicNs), monotonic_ns());
  p.set_int(std::string(k::kLevel), config_.level);
  p.set(std::string(k::kClockDomains), "0=monotonic,1=realtime,2=tsc");
  char ratio[64];
  std::snprintf(ratio, sizeof(ratio), "%.12g", clock_.ns_per_tick());
  p.set(std::string(k::kTscNsPerTick), ratio);
  p.set_int(std::string(k::kTscAnchorTicks), static_cast<int64_t>(clock_.tick0()));
  p.set_int(std::string(k::kTscAnchorNs), clock_.mono0());
  p.set(std::string(k::kWriter), "strata-collect 1");
  write_rank_identity(&p);
  // The budget events may use (with the growth allowance): what a full buffer ran into.
  p.set_int("buffer_bytes", static_cast<int64_t>(pool_.max_blocks() * kBlockBytes));
  stream_->write_properties(format::ChunkType::kProcess, p);
}

void Session::write_clock_snapshot() {
  format::ClockReading r[3];
  uint64_t ticks = detail::now_ticks();
  r[0] = {static_cast<uint32_t>(ClockDomain::kMonotonic), 0, monotonic_ns()};
  r[1] = {static_cast<uint32_t>(ClockDomain::kRealtime), 0, realtime_ns()};
  r[2] = {static_cast<uint32_t>(ClockDomain::kTsc), 0, static_cast<int64_t>(ticks)};
  stream_->write_clock_snapshot(r);
}

void Session::write_stats(bool final) {
  const bool space_low = file_.space_low();
  if (space_low && !final && low_space_stats_written_) return;
  format::Properties p;
  // Spans the writer could not put in the file (a failed write, or no room left), with the reason.
  consumer_drops_[kDropWriteFailed].store(stream_->spans_lost(), std::memory_order_relaxed);
  uint64_t hash = stream_->failed() ? 1 : 0;
  if (stream_->failed()) p.set("collector.writer.error", file_.error());
  if (uint64_t chunks = stream_->chunks_lost())
    p.set_int("collector.writer.chunks_not_written", static_cast<int64_t>(chunks));
  for (int c = 0; c < kDropCauseCount; ++c) {
    uint64_t n = drops(c);
    hash = hash * 1000003 + n;
    p.set_int(std::string(drop_cause_key(c)), static_cast<int64_t>(n));
  }
  for (const auto& [tid, name] : thread_names_) {
    p.set("thread_name." + std::to_string(tid), name);
    hash = hash * 31 + tid;
  }
  {
    std::lock_guard<std::mutex> lock(collector_mu_);
    for (const auto& [cause, n] : collector_drops_) {
      p.set_int(std::string(format::keys::kDroppedPrefix) + cause, static_cast<int64_t>(n));
      hash = hash * 1000003 + n;
    }
    for (const auto& [key, value] : collector_properties_) {
      p.set("collector." + key, value);
      hash = hash * 31 + std::hash<std::string>{}(value);
    }
  }
  p.set_int("spans_written", static_cast<int64_t>(stream_->spans_written() + stream_->pending_spans()));
  p.set_int("unfinished_spans", static_cast<int64_t>(unfinished_spans_));
  hash = hash * 31 + unfinished_spans_;
  // What the budget was and how much of it a burst used: with buffer_full drops, the summary can
  // say whether a larger budget (STRATA_BUFFER_MB / --buffer-mb) would have kept them.
  p.set_int("buffer_limit_bytes", static_cast<int64_t>(pool_.max_blocks() * kBlockBytes));
  p.set_int("buffer_peak_bytes", static_cast<int64_t>(pool_.peak_in_use() * kBlockBytes));
  hash = hash * 31 + pool_.peak_in_use();
  if (hash == stats_written_hash_ && hash != 0) return;
  stats_written_hash_ = hash;
  stream_->write_properties(format::ChunkType::kStats, p);
  low_space_stats_written_ = space_low;
}

// ---------------------------------------------------------------------------------------------
// Producer side

ThreadState* Session::register_thread() {
  auto state = std::make_unique<ThreadState>();
  ThreadState* t = state.get();
  t->session = this;
  t->tid = current_tid();
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    t->index = next_thread_index_++;
    threads_.push_back(t);
    owned_threads_.push_back(std::move(state));
  }
  tls_state = t;
  strata_tls_cursor = &t->cursor;
  pthread_setspecific(g_exit_key, t);
  if (auto hook = g_thread_registered_hook.load(std::memory_order_acquire)) hook();
  return t;
}

void Session::set_thread_registered_hook(void (*hook)()) { g_thread_registered_hook.store(hook); }

uint64_t Session::span_open_at_fork() const {
  ThreadState* t = tls_state;
  if (t == nullptr || t->session != this) return context_.parent_span_id;
  // Only the forking thread exists now: read its stack and mailbox without their locks (a lock
  // held by a thread of the parent would never be released here).
  for (size_t i = t->api_stack.size(); i-- > 0;) {
    uint64_t id = t->api_stack[i];
    if (std::find(t->mail.begin(), t->mail.end(), id) == t->mail.end()) return id;
  }
  return context_.parent_span_id;
}

ThreadState* Session::calling_thread_state() {
  ThreadState* t = tls_state;
  return t != nullptr && t->session == this ? t : nullptr;
}

ThreadState* Session::thread_state() {
  ThreadState* t = tls_state;
  if (t != nullptr && t->session == this && !t->exited.load(std::memory_order_relaxed)) return t;
  if (stopped_.load(std::memory_order_relaxed)) return nullptr;
  return register_thread();
}

detail::Slot* Session::reserve(ThreadState* t, uint32_t count, int drop_cause) {
  detail::ThreadCursor& c = t->cursor;
  detail::Slot* end = c.end.load(std::memory_order_relaxed);
  if (c.cur != nullptr && end - c.cur >= static_cast<ptrdiff_t>(count) &&
      t->deferred_count.load(std::memory_order_relaxed) == 0 &&
      t->deferred_overflow.load(std::memory_order_relaxed) == 0)
    return c.cur;
  if (stopped_.load(std::memory_order_relaxed)) return nullptr;
  detail::Slot* s = nullptr;
  if (count < BlockPool::slots_per_block() && write_deferred(t)) {
    end = c.end.load(std::memory_order_relaxed);
    if (c.cur != nullptr && end - c.cur >= static_cast<ptrdiff_t>(count)) s = c.cur;
    else if (switch_block(t)) s = c.cur;
  }
  if (s == nullptr && drop_cause != kDropEndLost) t->drops[drop_cause].fetch_add(1, std::memory_order_relaxed);
  return s;
}

bool Session::switch_block(ThreadState* t) {
  detail::ThreadCursor& c = t->cursor;
  std::lock_guard<std::mutex> lock(t->chain_mu);
  Block* old = t->write_block;
  // Nothing more goes into the old block (its commits precede this store): once read to the end,
  // the writer may take it back even if no successor follows.
  if (old != nullptr) old->closed.store(true, std::memory_order_release);
  Block* fresh = pool_.acquire();
  if (fresh == nullptr) {
    c.end.store(c.cur, std::memory_order_relaxed);  // the hot path comes back here, never into `old`
    return false;
  }
  // Publishing `next` seals the old block: the writer frees it once it has read all of it. If the
  // writer already took the old block back, the chain starts anew at `head`.
  if (old != nullptr) old->next.store(fresh, std::memory_order_release);
  else t->head = fresh;
  t->write_block = fresh;
  // More than half the budget waiting to be read: wake the writer now rather than at its next tick.
  if (pool_.in_use() * 2 > pool_.max_blocks() && !drain_soon_.exchange(true, std::memory_order_relaxed))
    wake_cv_.notify_one();
  c.base = fresh->slots();
  c.cur = c.base;
  c.committed = &fresh->committed;
  c.end.store(c.base + fresh->capacity, std::memory_order_relaxed);
  return true;
}

void Session::defer_end(ThreadState* t, uint64_t ticks, uint64_t span_id) {
  if (stopped_.load(std::memory_order_relaxed)) return;
  uint32_t n = t->deferred_count.load(std::memory_order_relaxed);
  if (t->deferred == nullptr) t->deferred.reset(new (std::nothrow) detail::Slot[kMaxDeferredEnds]);
  if (t->deferred != nullptr && n < kMaxDeferredEnds && t->deferred_overflow.load(std::memory_order_relaxed) == 0) {
    t->deferred[n].ts = ticks;
    t->deferred[n].word = span_id;
    t->deferred_count.store(n + 1, std::memory_order_release);
  } else if (span_id == 0) {
    // Beyond the list a static end keeps only its count: the writer still closes the right spans
    // (innermost static first), at this bounded time, flagged unfinished and counted as end_lost.
    t->deferred_overflow_ticks.store(ticks, std::memory_order_relaxed);
    t->deferred_overflow.fetch_add(1, std::memory_order_release);
  } else {
    // An API end beyond the list: the span stays open until the thread or the session ends.
    t->drops[kDropEndLost].fetch_add(1, std::memory_order_relaxed);
  }
  // Every later event of this thread goes through reserve(), which writes the deferred ends first.
  t->cursor.end.store(t->cursor.cur, std::memory_order_relaxed);
}

bool Session::write_deferred(ThreadState* t) {
  const uint32_t n = t->deferred_count.load(std::memory_order_relaxed);
  const uint32_t overflow = t->deferred_overflow.load(std::memory_order_relaxed);
  if (n == 0 && overflow == 0) return true;
  detail::ThreadCursor& c = t->cursor;
  if (c.cur == nullptr || c.end.load(std::memory_order_relaxed) - c.cur < static_cast<ptrdiff_t>(1 + n)) {
    if (!switch_block(t)) return false;
  }
  detail::Slot* s = c.cur;
  s[0].ts = t->deferred_overflow_ticks.load(std::memory_order_relaxed);
  s[0].word = event_word(kTagEndDeferred, n, overflow);
  if (n > 0) std::memcpy(static_cast<void*>(s + 1), t->deferred.get(), n * sizeof(detail::Slot));
  commit(t, s + 1 + n);
  t->deferred_count.store(0, std::memory_order_relaxed);
  t->deferred_overflow.store(0, std::memory_order_relaxed);
  return true;
}

void Session::commit(ThreadState* t, detail::Slot* after) {
  detail::ThreadCursor& c = t->cursor;
  c.cur = after;
  c.committed->store(static_cast<uint32_t>(after - c.base), std::memory_order_release);
}

bool Session::begin_static_slow(const detail::SourceLocation* loc) {
  ThreadState* t = thread_state();
  if (t == nullptr) return false;
  detail::Slot* s = reserve(t, 1, kDropBufferFull);
  if (s == nullptr) return false;
  s->ts = detail::now_ticks();
  s->word = reinterpret_cast<uint64_t>(loc);
  commit(t, s + 1);
  return true;
}

void Session::end_static_slow() {
  uint64_t ts = detail::now_ticks();
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  detail::Slot* s = reserve(t, 1, kDropEndLost);
  if (s == nullptr) return defer_end(t, ts, 0);
  s->ts = ts;
  s->word = kTagEnd;
  commit(t, s + 1);
}

uint64_t Session::new_api_id(ThreadState* t) {
  return make_span_id(id_salt_, t->index, false, t->next_api_counter++);
}

namespace {
// Copies `text` into slots starting at `dst`; returns the slot after the last byte.
detail::Slot* put_bytes(detail::Slot* dst, std::string_view text) {
  if (!text.empty()) std::memcpy(dst, text.data(), text.size());
  return dst + slots_for_bytes(text.size());
}
std::string_view clip(std::string_view text, ThreadState* t) {
  if (text.size() <= kMaxEventString) return text;
  t->drops[kDropStringTruncated].fetch_add(1, std::memory_order_relaxed);
  return text.substr(0, kMaxEventString);
}
}  // namespace

uint64_t Session::begin(std::string_view name, int level, ActivityType activity) {
  uint64_t ts = detail::now_ticks();
  ThreadState* t = thread_state();
  if (t == nullptr) return 0;
  name = clip(name, t);
  if (t->has_mail.load(std::memory_order_relaxed)) take_mail(t);
  uint32_t extra = 1 + slots_for_bytes(name.size());
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return 0;
  uint64_t id = new_api_id(t);
  s[0].ts = ts;
  s[0].word = event_word(kTagBegin, extra, begin_aux(level, name.size(), activity));
  s[1].ts = id;
  s[1].word = 0;
  commit(t, put_bytes(s + 2, name));
  t->api_stack.push_back(id);
  return id;
}

void Session::end(uint64_t span_id) {
  uint64_t ts = detail::now_ticks();
  if (span_id == 0) return;
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  uint32_t owner = 0;
  if (!api_span_owner(span_id, id_salt_, &owner) || owner != t->index) return hand_off_end(t, span_id, ts);
  if (t->has_mail.load(std::memory_order_relaxed)) take_mail(t);
  erase_from_api_stack(t, span_id);
  detail::Slot* s = reserve(t, 2, kDropEndLost);
  if (s == nullptr) return defer_end(t, ts, span_id);
  s[0].ts = ts;
  s[0].word = event_word(kTagEndId, 1, 0);
  s[1].ts = span_id;
  s[1].word = 0;
  commit(t, s + 2);
}

void Session::erase_from_api_stack(ThreadState* t, uint64_t span_id) {
  auto& stack = t->api_stack;
  for (size_t i = stack.size(); i-- > 0;) {
    if (stack[i] == span_id) {
      stack.erase(stack.begin() + static_cast<ptrdiff_t>(i));
      return;
    }
  }
}

// An API span ended on a thread other than the one that began it. The end goes to the writer on a
// side list (not this thread's buffer: the writer must apply it by time on the owner's stack, and it
// is never lost for lack of space), and to the owner's mailbox so its context (traceparent) moves on.
void Session::hand_off_end(ThreadState* t, uint64_t span_id, uint64_t ticks) {
  (void)t;
  {
    std::lock_guard<std::mutex> lock(handoff_mu_);
    handoff_ends_.push_back({ticks, span_id});
  }
  uint32_t owner_index = 0;
  if (!api_span_owner(span_id, id_salt_, &owner_index)) return;
  std::lock_guard<std::mutex> lock(threads_mu_);
  if (owner_index >= owned_threads_.size()) return;
  ThreadState* owner = owned_threads_[owner_index].get();
  std::lock_guard<std::mutex> mail_lock(owner->mail_mu);
  owner->mail.push_back(span_id);
  owner->has_mail.store(true, std::memory_order_release);
}

void Session::take_mail(ThreadState* t) {
  std::vector<uint64_t> mail;
  {
    std::lock_guard<std::mutex> lock(t->mail_mu);
    mail.swap(t->mail);
    t->has_mail.store(false, std::memory_order_relaxed);
  }
  for (uint64_t id : mail) erase_from_api_stack(t, id);
}

void Session::set_attr(uint64_t span_id, std::string_view key, AttrType type, int64_t i, double d,
                       std::string_view str) {
  if (span_id == 0) return;
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  key = clip(key, t);
  str = clip(str, t);
  uint32_t extra = 1 + slots_for_bytes(key.size()) + slots_for_bytes(str.size());
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return;
  uint64_t value = 0;
  if (type == AttrType::kDouble || type == AttrType::kMetric) std::memcpy(&value, &d, 8);
  else value = static_cast<uint64_t>(i);
  s[0].ts = value;
  s[0].word = event_word(kTagAttr, extra, static_cast<uint32_t>(key.size()));
  s[1].ts = span_id;
  s[1].word = static_cast<uint64_t>(type) | (static_cast<uint64_t>(str.size()) << 8);
  detail::Slot* p = put_bytes(s + 2, key);
  commit(t, put_bytes(p, str));
}

void Session::set_int_attrs(uint64_t span_id, const char* const* keys, const int64_t* values, size_t count) {
  if (span_id == 0 || count == 0) return;
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  uint32_t total = 0;
  for (size_t k = 0; k < count; ++k)
    total += 2 + slots_for_bytes(clip(keys[k] ? std::string_view(keys[k]) : std::string_view(), t).size());
  detail::Slot* s = reserve(t, total, kDropBufferFull);  // one reservation and one commit for all
  if (s == nullptr) return;
  for (size_t k = 0; k < count; ++k) {
    std::string_view key =
        keys[k] ? std::string_view(keys[k]).substr(0, kMaxEventString) : std::string_view();
    uint32_t extra = 1 + slots_for_bytes(key.size());
    s[0].ts = static_cast<uint64_t>(values[k]);
    s[0].word = event_word(kTagAttr, extra, static_cast<uint32_t>(key.size()));
    s[1].ts = span_id;
    s[1].word = static_cast<uint64_t>(AttrType::kInt);
    s = put_bytes(s + 2, key);
  }
  commit(t, s);
}

void Session::instant(std::string_view name, int level) {
  uint64_t ts = detail::now_ticks();
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  name = clip(name, t);
  uint32_t extra = slots_for_bytes(name.size());
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return;
  s[0].ts = ts;
  s[0].word = event_word(kTagInstant, extra, static_cast<uint32_t>(level & 0xFF) |
                                                 (static_cast<uint32_t>(name.size()) << 8));
  commit(t, put_bytes(s + 1, name));
}

void Session::counter(std::string_view name, double value) {
  uint64_t ts = detail::now_ticks();
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  name = clip(name, t);
  uint32_t extra = 1 + slots_for_bytes(name.size());
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return;
  s[0].ts = ts;
  s[0].word = event_word(kTagCounter, extra, static_cast<uint32_t>(name.size()));
  std::memcpy(&s[1].ts, &value, 8);
  s[1].word = 0;
  commit(t, put_bytes(s + 2, name));
}

void Session::set_thread_name(std::string_view name) {
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  name = clip(name, t);
  uint32_t extra = slots_for_bytes(name.size());
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return;
  s[0].ts = 0;
  s[0].word = event_word(kTagThreadName, extra, static_cast<uint32_t>(name.size()));
  commit(t, put_bytes(s + 1, name));
}

void Session::emit_complete(const SpanRecord& record, std::string_view name, std::span<const AttrDraft> attrs) {
  ThreadState* t = thread_state();
  if (t == nullptr) return;
  name = clip(name, t);
  uint32_t extra = 4 + slots_for_bytes(name.size());
  size_t attr_count = std::min<size_t>(attrs.size(), 64);
  for (size_t i = 0; i < attr_count; ++i)
    extra += 1 + slots_for_bytes(std::min(attrs[i].key.size(), kMaxEventString)) +
             slots_for_bytes(std::min(attrs[i].s.size(), kMaxEventString));
  detail::Slot* s = reserve(t, 1 + extra, kDropBufferFull);
  if (s == nullptr) return;
  SpanRecord r = record;
  r.attr_count = static_cast<uint16_t>(attr_count);
  s[0].ts = 0;
  s[0].word = event_word(kTagComplete, extra, static_cast<uint32_t>(name.size()));
  std::memcpy(&s[1], &r, sizeof(r));
  detail::Slot* p = put_bytes(s + 5, name);
  for (size_t i = 0; i < attr_count; ++i) {
    std::string_view key = clip(attrs[i].key, t);
    std::string_view str = clip(attrs[i].s, t);
    uint64_t value = 0;
    if (attrs[i].type == AttrType::kDouble || attrs[i].type == AttrType::kMetric) std::memcpy(&value, &attrs[i].d, 8);
    else value = static_cast<uint64_t>(attrs[i].i);
    p->ts = value;
    p->word = static_cast<uint64_t>(attrs[i].type) | (static_cast<uint64_t>(key.size()) << 8) |
              (static_cast<uint64_t>(str.size()) << 32);
    p = put_bytes(put_bytes(p + 1, key), str);
  }
  commit(t, p);
}

uint64_t Session::current_api_span() {
  ThreadState* t = tls_state;
  if (t != nullptr && t->session == this && t->has_mail.load(std::memory_order_relaxed)) take_mail(t);
  if (t != nullptr && t->session == this && !t->api_stack.empty()) return t->api_stack.back();
  return context_.parent_span_id;
}

void Session::set_collector_drops(std::string_view cause, uint64_t total) {
  std::lock_guard<std::mutex> lock(collector_mu_);
  for (auto& entry : collector_drops_) {
    if (entry.first == cause) {
      entry.second = total;
      return;
    }
  }
  collector_drops_.emplace_back(std::string(cause), total);
}

void Session::set_collector_property(std::string_view key, std::string_view value) {
  std::lock_guard<std::mutex> lock(collector_mu_);
  for (auto& entry : collector_properties_) {
    if (entry.first == key) {
      entry.second = std::string(value);
      return;
    }
  }
  collector_properties_.emplace_back(std::string(key), std::string(value));
}

void Session::on_thread_exit(ThreadState* state) {
  // Ends still deferred get one more chance at buffer space; what remains the writer applies from
  // the thread state once it sees `exited`.
  if (!stopped_.load(std::memory_order_relaxed)) write_deferred(state);
  state->exited.store(true, std::memory_order_release);
  if (tls_state == state) {
    tls_state = nullptr;
    strata_tls_cursor = nullptr;
  }
}

void Session::pause_writer_for_testing(bool paused) { paused_.store(paused); }

}  // namespace strata::collect
