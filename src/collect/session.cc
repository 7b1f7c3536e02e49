#include "collect/session.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/level.h"
#include "format/payloads.h"

namespace strata::collect {

namespace {

constexpr const char* kDropCauseNames[kDropCauseCount] = {
    "buffer_full", "end_lost", "unmatched_end", "attr_without_span", "string_truncated", "write_failed",
    "corrupt_buffer",
};

// Span ids: salt (12 bits, per process) | thread index (20) | origin (1: 0 = API, 1 = writer) |
// counter (31). Unique within a process for 2^31 spans per thread and origin; the salt keeps
// processes of one trace apart.
uint64_t make_span_id(uint64_t salt, uint32_t thread_index, bool writer_assigned, uint64_t counter) {
  return (salt << 52) | (uint64_t{thread_index & 0xFFFFF} << 32) | (uint64_t{writer_assigned} << 31) |
         (counter & 0x7FFFFFFF);
}

uint32_t current_tid() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

}  // namespace

const char* drop_cause_name(int cause) {
  return cause >= 0 && cause < kDropCauseCount ? kDropCauseNames[cause] : "unknown";
}

struct ThreadState {
  detail::ThreadCursor cursor;  // producer
  Block* write_block = nullptr;  // producer
  std::atomic<Block*> head{nullptr};
  Session* session = nullptr;
  uint32_t tid = 0;
  uint32_t index = 0;
  uint64_t next_api_counter = 1;  // producer
  std::vector<uint64_t> api_stack;  // producer: open API spans, for traceparent
  std::atomic<uint64_t> drops[kDropCauseCount] = {};
  std::atomic<bool> exited{false};

  // Consumer (writer thread) side.
  Block* read_block = nullptr;
  uint32_t read_pos = 0;
  uint64_t next_writer_counter = 1;
  int64_t last_ns = 0;
  struct Open {
    uint64_t id;
    uint64_t parent;
    int64_t start_ns;
    uint32_t name;
    uint8_t level;
    uint8_t activity;  // ActivityType
    std::vector<AttrRecord> attrs;
  };
  std::vector<Open> open;
};

namespace {
thread_local ThreadState* tls_state = nullptr;
pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit_key(void* arg) {
  auto* state = static_cast<ThreadState*>(arg);
  if (state != nullptr && state->session != nullptr) state->session->on_thread_exit(state);
}
}  // namespace

Session::Session(SessionConfig config)
    : config_(std::move(config)), pool_(std::max<size_t>(2, config_.buffer_bytes / kBlockBytes)) {
  context_ = config_.context.value_or(new_trace_context());
  id_salt_ = random_u64() & 0xFFF;
}

Session::~Session() { stop(); }

uint64_t Session::drops(int cause) const {
  uint64_t total = consumer_drops_[cause].load(std::memory_order_relaxed);
  // Producer-side counters live in thread states, which are only added, never removed, while the
  // session lives.
  auto* self = const_cast<Session*>(this);
  std::lock_guard<std::mutex> lock(self->threads_mu_);
  for (const auto& t : owned_threads_) total += t->drops[cause].load(std::memory_order_relaxed);
  return total;
}

bool Session::start() {
  if (!file_.open(config_.path)) {
    error_ = file_.error();
    return false;
  }
  stream_ = std::make_unique<format::StreamWriter>(&file_, random_u64(), config_.compression_level);
  clock_.calibrate(2'000'000);  // 2 ms: refined at the end (see write_stats)
  write_header();
  write_clock_snapshot();
  stream_->flush();
  last_flush_ns_ = monotonic_ns();
  last_snapshot_ns_ = last_flush_ns_;
  pthread_once(&g_exit_key_once, [] { pthread_key_create(&g_exit_key, on_thread_exit_key); });
  writer_ = std::thread([this] { writer_loop(); });
  return true;
}

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
  p.set_int("buffer_bytes", static_cast<int64_t>(config_.buffer_bytes));
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

void Session::write_stats() {
  format::Properties p;
  uint64_t hash = 0;
  for (int c = 0; c < kDropCauseCount; ++c) {
    uint64_t n = drops(c);
    hash = hash * 1000003 + n;
    p.set_int(std::string(format::keys::kDroppedPrefix) + drop_cause_name(c), static_cast<int64_t>(n));
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
  if (hash == stats_written_hash_ && hash != 0) return;
  stats_written_hash_ = hash;
  stream_->write_properties(format::ChunkType::kStats, p);
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
  return t;
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
  if (c.cur != nullptr && end - c.cur >= static_cast<ptrdiff_t>(count)) return c.cur;
  if (stopped_.load(std::memory_order_relaxed)) return nullptr;
  if (count >= BlockPool::slots_per_block()) {
    t->drops[drop_cause].fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Block* fresh = pool_.acquire();
  if (fresh == nullptr) {
    t->drops[drop_cause].fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Block* old = t->write_block;
  t->write_block = fresh;
  c.base = fresh->slots();
  c.cur = c.base;
  c.committed = &fresh->committed;
  c.end.store(c.base + fresh->capacity, std::memory_order_relaxed);
  // Publishing `next` seals the old block: the writer frees it once it has read all of it.
  if (old != nullptr) old->next.store(fresh, std::memory_order_release);
  else t->head.store(fresh, std::memory_order_release);
  return c.cur;
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
  if (s == nullptr) return;
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
  auto& stack = t->api_stack;
  for (size_t i = stack.size(); i-- > 0;) {
    if (stack[i] == span_id) {
      stack.erase(stack.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
  }
  detail::Slot* s = reserve(t, 2, kDropEndLost);
  if (s == nullptr) return;
  s[0].ts = ts;
  s[0].word = event_word(kTagEndId, 1, 0);
  s[1].ts = span_id;
  s[1].word = 0;
  commit(t, s + 2);
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
  state->exited.store(true, std::memory_order_release);
  if (tls_state == state) {
    tls_state = nullptr;
    strata_tls_cursor = nullptr;
  }
}

void Session::pause_writer_for_testing(bool paused) { paused_.store(paused); }

// ---------------------------------------------------------------------------------------------
// Consumer side (writer thread)

void Session::writer_loop() {
  std::unique_lock<std::mutex> lock(wake_mu_);
  for (;;) {
    wake_cv_.wait_for(lock, std::chrono::milliseconds(config_.drain_interval_ms),
                      [&] { return stop_requested_ || flush_requests_ > flushes_done_; });
    bool stopping = stop_requested_;
    uint64_t requested = flush_requests_;
    lock.unlock();
    if (!paused_.load() || stopping) drain_all();
    int64_t now = monotonic_ns();
    bool flush_now = stopping || requested > flushes_done_ ||
                     now - last_flush_ns_ >= int64_t{config_.flush_interval_ms} * 1'000'000;
    if (flush_now) {
      stream_->flush();
      write_stats();
      // A (monotonic, realtime, ticks) reading now and then lets the loader correct the start-up
      // tick calibration, even for a process that is killed before it writes its End chunk.
      if (now - last_snapshot_ns_ >= 1'000'000'000) {
        write_clock_snapshot();
        last_snapshot_ns_ = now;
      }
      last_flush_ns_ = now;
    }
    lock.lock();
    if (flush_now) {
      flushes_done_ = requested;
      flushed_cv_.notify_all();
    }
    if (stopping) return;
  }
}

void Session::drain_all() {
  std::vector<ThreadState*> threads;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    threads = threads_;
  }
  for (ThreadState* t : threads) drain_thread(*t);
  // Forget threads that exited and were read to the end: their blocks go back to the pool.
  std::lock_guard<std::mutex> lock(threads_mu_);
  std::erase_if(threads_, [&](ThreadState* t) {
    if (!t->exited.load(std::memory_order_acquire)) return false;
    drain_thread(*t);
    if (t->read_block != nullptr && t->read_block->next.load(std::memory_order_acquire) != nullptr) return false;
    if (!t->open.empty()) finish_open_spans(*t);
    if (t->read_block != nullptr) pool_.release(t->read_block);
    t->read_block = nullptr;
    return true;
  });
}

void Session::drain_thread(ThreadState& t) {
  for (;;) {
    Block* b = t.read_block;
    if (b == nullptr) {
      b = t.head.load(std::memory_order_acquire);
      if (b == nullptr) return;
      t.read_block = b;
      t.read_pos = 0;
    }
    Block* next = b->next.load(std::memory_order_acquire);
    uint32_t committed = b->committed.load(std::memory_order_acquire);
    if (committed > t.read_pos) process_events(t, b->slots() + t.read_pos, committed - t.read_pos);
    t.read_pos = committed;
    if (next == nullptr) return;
    pool_.release(b);
    t.read_block = next;
    t.read_pos = 0;
  }
}

void Session::process_events(ThreadState& t, const detail::Slot* slots, uint32_t count) {
  uint64_t emitted = 0;  // published once per batch: an atomic add per span costs more than the span
  const detail::SourceLocation* last_loc = nullptr;
  uint32_t last_loc_name = 0;
  auto emit = [&](uint64_t id, uint64_t parent, int64_t start, int64_t end, uint32_t name, uint8_t level,
                  uint8_t kind, std::span<const AttrRecord> attrs, uint32_t tid, ActivityType activity) {
    SpanRecord r;
    r.span_id = id;
    r.parent_id = parent;
    r.start_ns = start;
    r.end_ns = end;
    r.name = name;
    r.tid = tid;
    r.level = level;
    r.kind = kind;
    r.activity = static_cast<uint8_t>(activity);
    r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
    r.flags = kSpanFlagFromTicks;
    stream_->add_span(r, attrs);
    ++emitted;
  };
  auto parent_of_new = [&]() { return t.open.empty() ? context_.parent_span_id : t.open.back().id; };
  auto bytes = [](const detail::Slot* p, size_t n) { return std::string_view(reinterpret_cast<const char*>(p), n); };

  for (uint32_t i = 0; i < count;) {
    const detail::Slot& head = slots[i];
    uint64_t tag = tag_of(head.word);
    if (tag == kTagBeginStatic) {
      const auto* loc = reinterpret_cast<const detail::SourceLocation*>(head.word);
      if (loc != last_loc) {  // hot loops repeat one site: skip the hash lookup
        auto [it, inserted] = location_names_.try_emplace(loc, 0);
        if (inserted) it->second = stream_->intern(loc->name);
        last_loc = loc;
        last_loc_name = it->second;
      }
      int64_t ns = clock_.to_ns(head.ts);
      // Sites compiled before SourceLocation had the field read 0 (zero-filled padding): annotation.
      const uint8_t activity = loc->activity != 0 ? loc->activity : static_cast<uint8_t>(ActivityType::kAnnotation);
      t.open.push_back({make_span_id(id_salt_, t.index, true, t.next_writer_counter++), parent_of_new(), ns,
                        last_loc_name, loc->level, activity, {}});
      t.last_ns = ns;
      i += 1;
      continue;
    }
    if (tag == kTagEnd) {
      int64_t ns = clock_.to_ns(head.ts);
      t.last_ns = ns;
      i += 1;
      if (t.open.empty()) {
        consumer_drops_[kDropUnmatchedEnd].fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      ThreadState::Open& o = t.open.back();
      emit(o.id, o.parent, o.start_ns, ns, o.name, o.level, static_cast<uint8_t>(SpanKind::kSpan), o.attrs, t.tid,
           static_cast<ActivityType>(o.activity));
      t.open.pop_back();
      continue;
    }
    uint32_t extra = extra_of(head.word);
    uint32_t aux = aux_of(head.word);
    const detail::Slot* x = slots + i + 1;
    i += 1 + extra;
    switch (tag) {
      case kTagBegin: {
        uint64_t id = x[0].ts;
        std::string_view name = bytes(x + 1, aux_name_len(aux));
        const auto activity = static_cast<ActivityType>(aux >> 24);
        int64_t ns = clock_.to_ns(head.ts);
        t.last_ns = ns;
        auto early = early_ends_.find(id);
        if (early != early_ends_.end()) {  // ended on another thread before we read its begin
          emit(id, parent_of_new(), ns, early->second, stream_->intern(name), static_cast<uint8_t>(aux & 0xFF),
               static_cast<uint8_t>(SpanKind::kSpan), {}, t.tid, activity);
          early_ends_.erase(early);
          break;
        }
        t.open.push_back({id, parent_of_new(), ns, stream_->intern(name), static_cast<uint8_t>(aux & 0xFF),
                          static_cast<uint8_t>(activity), {}});
        open_api_spans_[id] = {&t};
        break;
      }
      case kTagEndId: {
        uint64_t id = x[0].ts;
        int64_t ns = clock_.to_ns(head.ts);
        t.last_ns = ns;
        auto ref = open_api_spans_.find(id);
        if (ref == open_api_spans_.end()) {
          early_ends_[id] = ns;
          break;
        }
        ThreadState& owner = *ref->second.owner;
        open_api_spans_.erase(ref);
        for (size_t k = owner.open.size(); k-- > 0;) {
          if (owner.open[k].id != id) continue;
          ThreadState::Open& o = owner.open[k];
          // The span belongs to the thread that began it, even when another thread ended it.
          emit(o.id, o.parent, o.start_ns, ns, o.name, o.level, static_cast<uint8_t>(SpanKind::kSpan), o.attrs,
               owner.tid, static_cast<ActivityType>(o.activity));
          owner.open.erase(owner.open.begin() + static_cast<ptrdiff_t>(k));
          break;
        }
        break;
      }
      case kTagAttr: {
        uint64_t id = x[0].ts;
        auto type = static_cast<AttrType>(x[0].word & 0xFF);
        size_t str_len = static_cast<size_t>(x[0].word >> 8);
        std::string_view key = bytes(x + 1, aux);
        std::string_view str = bytes(x + 1 + slots_for_bytes(aux), str_len);
        auto ref = open_api_spans_.find(id);
        if (ref == open_api_spans_.end()) {
          consumer_drops_[kDropAttrNoSpan].fetch_add(1, std::memory_order_relaxed);
          break;
        }
        for (auto it = ref->second.owner->open.rbegin(); it != ref->second.owner->open.rend(); ++it) {
          if (it->id != id) continue;
          AttrRecord a;
          a.key = stream_->intern(key);
          a.type = static_cast<uint8_t>(type);
          a.value.u = head.ts;
          if (type == AttrType::kString) a.value.u = stream_->intern(str);
          it->attrs.push_back(a);
          break;
        }
        break;
      }
      case kTagInstant: {
        int64_t ns = clock_.to_ns(head.ts);
        emit(make_span_id(id_salt_, t.index, true, t.next_writer_counter++), parent_of_new(), ns, ns,
             stream_->intern(bytes(x, aux_name_len(aux))), static_cast<uint8_t>(aux & 0xFF),
             static_cast<uint8_t>(SpanKind::kInstant), {}, t.tid, ActivityType::kAnnotation);
        break;
      }
      case kTagCounter: {
        int64_t ns = clock_.to_ns(head.ts);
        double value;
        std::memcpy(&value, &x[0].ts, 8);
        AttrRecord a;
        a.key = stream_->intern("value");
        a.type = static_cast<uint8_t>(AttrType::kMetric);
        a.value.d = value;
        emit(make_span_id(id_salt_, t.index, true, t.next_writer_counter++), 0, ns, ns,
             stream_->intern(bytes(x + 1, aux)), static_cast<uint8_t>(Level::kApplication),
             static_cast<uint8_t>(SpanKind::kCounter), std::span<const AttrRecord>(&a, 1), t.tid,
             ActivityType::kCounter);
        break;
      }
      case kTagComplete: {
        SpanRecord r;
        std::memcpy(static_cast<void*>(&r), x, sizeof(r));
        r.name = stream_->intern(bytes(x + 4, aux));
        if (r.tid == 0) r.tid = t.tid;
        if (r.span_id == 0) r.span_id = make_span_id(id_salt_, t.index, true, t.next_writer_counter++);
        const detail::Slot* p = x + 4 + slots_for_bytes(aux);
        std::vector<AttrRecord> attrs(r.attr_count);
        for (auto& a : attrs) {
          size_t key_len = (p->word >> 8) & 0xFFFFFF;
          size_t str_len = p->word >> 32;
          a.type = static_cast<uint8_t>(p->word & 0xFF);
          a.value.u = p->ts;
          a.key = stream_->intern(bytes(p + 1, key_len));
          if (a.type == static_cast<uint8_t>(AttrType::kString))
            a.value.u = stream_->intern(bytes(p + 1 + slots_for_bytes(key_len), str_len));
          p += 1 + slots_for_bytes(key_len) + slots_for_bytes(str_len);
        }
        stream_->add_span(r, attrs);
        ++emitted;
        break;
      }
      case kTagThreadName: {
        std::string name(bytes(x, aux));
        auto it = std::find_if(thread_names_.begin(), thread_names_.end(), [&](auto& e) { return e.first == t.tid; });
        if (it != thread_names_.end()) it->second = name;
        else thread_names_.emplace_back(t.tid, name);
        break;
      }
      default:
        // Unknown tag: the buffer is corrupt (a bug). Skip the rest of this batch, counted.
        consumer_drops_[kDropCorruptBuffer].fetch_add(1, std::memory_order_relaxed);
        spans_written_.fetch_add(emitted, std::memory_order_relaxed);
        return;
    }
  }
  spans_written_.fetch_add(emitted, std::memory_order_relaxed);
}

void Session::finish_open_spans(ThreadState& t) {
  // Spans still open when the thread or the recording ended: kept, flagged unfinished, counted.
  for (auto& o : t.open) {
    SpanRecord r;
    r.span_id = o.id;
    r.parent_id = o.parent;
    r.start_ns = o.start_ns;
    r.end_ns = std::max(o.start_ns, t.last_ns);
    r.name = o.name;
    r.tid = t.tid;
    r.level = o.level;
    r.kind = static_cast<uint8_t>(SpanKind::kSpan);
    r.activity = o.activity;
    r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
    r.flags = kSpanFlagUnfinished | kSpanFlagFromTicks;
    stream_->add_span(r, o.attrs);
    spans_written_.fetch_add(1, std::memory_order_relaxed);
    open_api_spans_.erase(o.id);
    ++unfinished_spans_;
  }
  t.open.clear();
}

void Session::flush() {
  std::unique_lock<std::mutex> lock(wake_mu_);
  if (stopped_ || !writer_.joinable()) return;
  uint64_t ticket = ++flush_requests_;
  wake_cv_.notify_all();
  flushed_cv_.wait(lock, [&] { return flushes_done_ >= ticket || stop_requested_; });
}

void Session::stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_requested_ = true;
  }
  if (!writer_.joinable()) return;
  // Retire every producer cursor so threads that keep running take the slow path (and find no
  // session) instead of writing into blocks nobody reads.
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& t : owned_threads_) {
      detail::Slot* cur = t->cursor.cur;
      t->cursor.end.store(cur, std::memory_order_relaxed);
    }
  }
  wake_cv_.notify_all();
  writer_.join();
  // Final pass: everything committed is read; spans still open are written as unfinished.
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (ThreadState* t : threads_) {
      drain_thread(*t);
      finish_open_spans(*t);
    }
  }
  consumer_drops_[kDropUnmatchedEnd].fetch_add(early_ends_.size(), std::memory_order_relaxed);
  early_ends_.clear();
  stream_->flush();
  write_clock_snapshot();
  write_stats();
  format::Properties end;
  end.set_int(std::string(format::keys::kEndMonotonicNs), monotonic_ns());
  end.set_int("spans_written", static_cast<int64_t>(stream_->spans_written()));
  stream_->write_properties(format::ChunkType::kEnd, end);
  if (stream_->failed()) {
    consumer_drops_[kDropWriteFailed].fetch_add(1);
    error_ = stream_->error();
  }
  file_.close();
  // Thread states and blocks stay allocated (the session object is kept alive by the runtime):
  // a thread still inside a span site must never touch freed memory.
}

}  // namespace strata::collect
