// The writer thread of a session (consumer side): drains the threads' event blocks, pairs begins and
// ends, assigns ids and parents, and appends chunks to the process's trace file.
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collect/session.h"
#include "collect/session_internal.h"
#include "core/level.h"
#include "format/payloads.h"

namespace strata::collect {
namespace {
// The process's OS threads now (Strata's writer thread `skip` left out), and those of them that used
// at least a tenth of the CPU time of its busiest thread (utime + stime of /proc/self/task/TID/stat):
// the threads that shared its computing. CPU time is the work a thread did, whatever else ran on the
// machine, so the count is the same on a loaded machine as on an idle one (a share of the process's
// wall-clock life was not: threads starved by other processes fell under it). Zeros when /proc
// cannot be read.
struct ThreadCounts {
  int64_t threads = 0, busy = 0;
};
ThreadCounts os_threads(uint32_t skip) {
  ThreadCounts out;
  std::vector<unsigned long long> cpu_ticks;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  const long ticks = sysconf(_SC_CLK_TCK);
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.' || std::strtoul(e->d_name, nullptr, 10) == skip) continue;
    ++out.threads;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
    FILE* f = std::fopen(path, "re");
    if (f == nullptr) continue;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // Fields after the command name (which may hold spaces and parentheses): state is field 3,
    // utime 14, stime 15.
    const char* p = std::strrchr(buf, ')');
    if (p == nullptr || ticks <= 0) continue;
    unsigned long long utime = 0, stime = 0;
    if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
      continue;
    cpu_ticks.push_back(utime + stime);
  }
  closedir(dir);
  unsigned long long busiest = 0;
  for (unsigned long long t : cpu_ticks) busiest = std::max(busiest, t);
  for (unsigned long long t : cpu_ticks)
    if (busiest > 0 && t > 0 && 10 * t >= busiest) ++out.busy;
  return out;
}

std::string_view bytes(const detail::Slot* p, size_t n) { return {reinterpret_cast<const char*>(p), n}; }
}  // namespace

void Session::writer_loop() {
  writer_tid_.store(static_cast<uint32_t>(::syscall(SYS_gettid)), std::memory_order_release);
  std::unique_lock<std::mutex> lock(wake_mu_);
  for (;;) {
    wake_cv_.wait_for(lock, std::chrono::milliseconds(config_.drain_interval_ms), [&] {
      return stop_requested_ || flush_requests_ > flushes_done_ || drain_soon_.load(std::memory_order_relaxed);
    });
    drain_soon_.store(false, std::memory_order_relaxed);
    bool stopping = stop_requested_;
    uint64_t requested = flush_requests_;
    lock.unlock();
    if (!paused_.load() || stopping) drain_all();
    int64_t now = monotonic_ns();
    bool flush_now = stopping || requested > flushes_done_ ||
                     now - last_flush_ns_ >= int64_t{config_.flush_interval_ms} * 1'000'000;
    if (flush_now) {
      if (WriterPlugin* plugin = plugin_.load(std::memory_order_acquire)) plugin->write(*stream_, false);
      stream_->flush();
      write_stats();
      // A (monotonic, realtime, ticks) reading now and then lets the loader correct the start-up
      // tick calibration, even for a process that is killed before it writes its End chunk.
      if (now - last_snapshot_ns_ >= 1'000'000'000 && !file_.space_low()) {
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
  // Every event stamped before this instant is committed (a thread stamps, then commits at once).
  const int64_t complete_before = clock_.to_ns(detail::now_ticks());
  std::vector<ThreadState*> threads;
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    threads = threads_;
  }
  // First how far each thread has committed, then the ends other threads handed off: an event in
  // this snapshot that happened after a hand-off (e.g. the thread joined the ender) then sees it.
  struct Limit {
    const Block* block;
    uint32_t pos;
  };
  std::vector<Limit> limits(threads.size(), Limit{nullptr, 0});
  for (size_t i = 0; i < threads.size(); ++i) {
    ThreadState& t = *threads[i];
    if (t.read_block == nullptr) {
      std::lock_guard<std::mutex> lock(t.chain_mu);
      t.read_block = t.head;
      t.head = nullptr;
      t.read_pos = 0;
    }
    const Block* b = t.read_block;
    if (b == nullptr) continue;
    for (const Block* next = b->next.load(std::memory_order_acquire); next != nullptr;
         next = b->next.load(std::memory_order_acquire))
      b = next;
    limits[i] = {b, b->committed.load(std::memory_order_acquire)};
  }
  take_handoff_ends();
  for (size_t i = 0; i < threads.size(); ++i)
    if (limits[i].block != nullptr) drain_thread(*threads[i], limits[i].block, limits[i].pos);
  // Forget threads that exited and were read to the end: their blocks go back to the pool.
  std::lock_guard<std::mutex> lock(threads_mu_);
  std::erase_if(threads_, [&](ThreadState* t) {
    if (!t->exited.load(std::memory_order_acquire)) return false;
    drain_thread(*t);
    if (t->read_block != nullptr && t->read_block->next.load(std::memory_order_acquire) != nullptr) return false;
    // Ends the thread deferred and could not write before it exited (its state is final now).
    uint32_t n = t->deferred_count.load(std::memory_order_acquire);
    uint32_t overflow = t->deferred_overflow.load(std::memory_order_acquire);
    if (n > 0 || overflow > 0) {
      apply_deferred_ends(*t, t->deferred.get(), n, overflow, t->deferred_overflow_ticks.load(std::memory_order_relaxed));
      t->deferred_count.store(0, std::memory_order_relaxed);
      t->deferred_overflow.store(0, std::memory_order_relaxed);
    }
    if (t->open_with_known_end > 0) close_known_ends(*t, INT64_MAX);
    if (!t->open.empty()) finish_open_spans(*t);
    if (t->read_block != nullptr) pool_.release(t->read_block);
    t->read_block = nullptr;
    return true;
  });
  if (plugin_.load(std::memory_order_relaxed) != nullptr) plugin_after_drain(complete_before);
}

void Session::plugin_after_drain(int64_t complete_before_ns) {
  WriterPlugin* plugin = plugin_.load(std::memory_order_acquire);
  if (plugin == nullptr) return;
  std::vector<SpanTimes> open;
  for (ThreadState* t : threads_)  // the writer's own list (threads_mu_ held by the caller or final)
    for (const OpenSpan& o : t->open) open.push_back({t->tid, o.start_ns, INT64_MAX, o.id});
  const int64_t to_monotonic = monotonic_ns() - clock_.to_ns(detail::now_ticks());
  plugin->after_drain(plugin_closed_, open, complete_before_ns, to_monotonic);
  plugin_closed_.clear();
}

void Session::drain_thread(ThreadState& t, const Block* limit, uint32_t limit_pos) {
  for (;;) {
    Block* b = t.read_block;
    if (b == nullptr) {
      if (limit != nullptr) return;  // the snapshot's blocks are read
      std::lock_guard<std::mutex> lock(t.chain_mu);
      b = t.head;
      t.head = nullptr;
      if (b == nullptr) return;
      t.read_block = b;
      t.read_pos = 0;
    }
    Block* next = b->next.load(std::memory_order_acquire);
    const bool closed = b->closed.load(std::memory_order_acquire);
    const uint32_t committed = b->committed.load(std::memory_order_acquire);  // final once next/closed
    const bool at_limit = b == limit;
    const uint32_t upto = at_limit ? std::min(limit_pos, committed) : committed;
    if (upto > t.read_pos) {
      process_events(t, b->slots() + t.read_pos, upto - t.read_pos);
      t.read_pos = upto;
    }
    if (t.read_pos < committed) break;  // more than the snapshot holds: the next round reads it
    if (next != nullptr) {
      pool_.release(b);
      t.read_block = next;
      t.read_pos = 0;
      if (at_limit) break;
      continue;
    }
    if (!closed) break;
    // Closed, read to the end, and no successor: the producer found the pool empty. Take the block
    // back (so a spent budget never strands blocks) unless the producer links a successor meanwhile.
    {
      std::lock_guard<std::mutex> lock(t.chain_mu);
      if (b->next.load(std::memory_order_acquire) != nullptr) continue;
      if (t.write_block == b) t.write_block = nullptr;
    }
    pool_.release(b);
    t.read_block = nullptr;
    t.read_pos = 0;
    if (limit != nullptr) break;
  }
  if (t.open_with_known_end > 0) close_known_ends(t, INT64_MAX);
}

void Session::take_handoff_ends() {
  std::vector<detail::Slot> ends;
  {
    std::lock_guard<std::mutex> lock(handoff_mu_);
    if (handoff_ends_.empty()) return;
    ends.swap(handoff_ends_);
  }
  for (const detail::Slot& e : ends) {
    const uint64_t id = e.word;
    const int64_t ns = clock_.to_ns(e.ts);
    auto ref = open_api_spans_.find(id);
    if (ref == open_api_spans_.end()) {
      early_ends_[id] = ns;  // its begin is not read yet
      continue;
    }
    ThreadState& owner = *ref->second.owner;
    for (size_t k = owner.open.size(); k-- > 0;) {
      if (owner.open[k].id != id) continue;
      if (owner.open[k].known_end == OpenSpan::kNoKnownEnd) ++owner.open_with_known_end;
      owner.open[k].known_end = ns;
      break;
    }
  }
}

void Session::emit_open(const ThreadState& owner, const OpenSpan& o, int64_t end_ns, uint8_t flags) {
  SpanRecord r;
  r.span_id = o.id;
  r.parent_id = o.parent;
  r.start_ns = o.start_ns;
  r.end_ns = std::max(o.start_ns, end_ns);
  r.name = o.name;
  r.tid = owner.tid;  // the span belongs to the thread that began it, even when another ended it
  r.level = o.level;
  r.kind = static_cast<uint8_t>(SpanKind::kSpan);
  r.activity = o.activity;
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  r.flags = static_cast<uint8_t>(kSpanFlagFromTicks | flags);
  note_closed(r.tid, r.start_ns, r.end_ns, r.span_id);
  stream_->add_span(r, o.attrs);
  spans_written_.fetch_add(1, std::memory_order_relaxed);
  if (flags & kSpanFlagUnfinished) ++unfinished_spans_;
}

// A static end (kTagEnd) closes the innermost *static* span: API spans above it on the stack are
// ended by id, possibly on another thread, and must not take this end.
void Session::close_innermost_static(ThreadState& t, int64_t end_ns, uint8_t flags) {
  for (size_t k = t.open.size(); k-- > 0;) {
    OpenSpan& o = t.open[k];
    if (o.api) continue;
    emit_open(t, o, end_ns, flags);
    t.open.erase(t.open.begin() + static_cast<ptrdiff_t>(k));
    return;
  }
  consumer_drops_[kDropUnmatchedEnd].fetch_add(1, std::memory_order_relaxed);
}

void Session::end_api_span(uint64_t span_id, int64_t end_ns) {
  auto ref = open_api_spans_.find(span_id);
  if (ref == open_api_spans_.end()) {
    early_ends_[span_id] = end_ns;
    return;
  }
  ThreadState& owner = *ref->second.owner;
  open_api_spans_.erase(ref);
  for (size_t k = owner.open.size(); k-- > 0;) {
    if (owner.open[k].id != span_id) continue;
    if (owner.open[k].known_end != OpenSpan::kNoKnownEnd) --owner.open_with_known_end;
    emit_open(owner, owner.open[k], end_ns, 0);
    owner.open.erase(owner.open.begin() + static_cast<ptrdiff_t>(k));
    return;
  }
}

// Spans another thread ended at or before `now_ns` are closed before this thread's next span takes
// its parent, so nothing that began after such an end nests under the ended span.
void Session::close_known_ends(ThreadState& t, int64_t now_ns) {
  for (size_t k = t.open.size(); k-- > 0 && t.open_with_known_end > 0;) {
    OpenSpan& o = t.open[k];
    if (o.known_end == OpenSpan::kNoKnownEnd || o.known_end > now_ns) continue;
    --t.open_with_known_end;
    open_api_spans_.erase(o.id);
    emit_open(t, o, o.known_end, 0);
    t.open.erase(t.open.begin() + static_cast<ptrdiff_t>(k));
  }
}

void Session::apply_deferred_ends(ThreadState& t, const detail::Slot* entries, uint32_t n, uint32_t overflow,
                                  uint64_t overflow_ticks) {
  for (uint32_t i = 0; i < n; ++i) {
    int64_t ns = clock_.to_ns(entries[i].ts);
    t.last_ns = std::max(t.last_ns, ns);
    if (entries[i].word == 0) close_innermost_static(t, ns, 0);
    else end_api_span(entries[i].word, ns);
  }
  if (overflow == 0) return;
  int64_t ns = clock_.to_ns(overflow_ticks);
  t.last_ns = std::max(t.last_ns, ns);
  for (uint32_t i = 0; i < overflow; ++i) close_innermost_static(t, ns, kSpanFlagUnfinished);
  consumer_drops_[kDropEndLost].fetch_add(overflow, std::memory_order_relaxed);
}

void Session::process_events(ThreadState& t, const detail::Slot* slots, uint32_t count) {
  uint64_t emitted = 0;  // published once per batch: an atomic add per span costs more than the span
  const detail::SourceLocation* last_loc = nullptr;
  uint32_t last_loc_name = 0;

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
      if (__builtin_expect(t.open_with_known_end > 0, 0)) close_known_ends(t, ns);
      // Sites compiled before SourceLocation had the field read 0 (zero-filled padding): annotation.
      const uint8_t activity = loc->activity != 0 ? loc->activity : static_cast<uint8_t>(ActivityType::kAnnotation);
      t.open.push_back({make_span_id(id_salt_, t.index, true, t.next_writer_counter++), parent_of_new(t), ns,
                        OpenSpan::kNoKnownEnd, last_loc_name, loc->level, activity, false, {}});
      t.last_ns = ns;
      i += 1;
      continue;
    }
    if (tag == kTagEnd) {
      int64_t ns = clock_.to_ns(head.ts);
      t.last_ns = ns;
      i += 1;
      if (__builtin_expect(!t.open.empty() && !t.open.back().api, 1)) {
        ThreadState::Open& o = t.open.back();
        append_span(o.id, o.parent, o.start_ns, ns, o.name, o.level, static_cast<uint8_t>(SpanKind::kSpan), o.attrs, t.tid,
                    static_cast<ActivityType>(o.activity));
        ++emitted;
        t.open.pop_back();
      } else {
        close_innermost_static(t, ns, 0);  // below an API span that is ended by id
      }
      continue;
    }
    uint32_t extra = extra_of(head.word);
    uint32_t aux = aux_of(head.word);
    const detail::Slot* x = slots + i + 1;
    i += 1 + extra;
    if (!process_other_event(t, tag, head, x, extra, aux, &emitted)) {
      // Unknown tag: the buffer is corrupt (a bug). Skip the rest of this batch, counted.
      consumer_drops_[kDropCorruptBuffer].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  spans_written_.fetch_add(emitted, std::memory_order_relaxed);
}

// Every event but a static begin or end (those stay in process_events' loop, the hot case).
bool Session::process_other_event(ThreadState& t, uint64_t tag, const detail::Slot& head, const detail::Slot* x,
                                  uint32_t extra, uint32_t aux, uint64_t* emitted) {
  switch (tag) {
      case kTagBegin: {
        uint64_t id = x[0].ts;
        std::string_view name = bytes(x + 1, aux_name_len(aux));
        const auto activity = static_cast<uint8_t>(aux >> 24);
        int64_t ns = clock_.to_ns(head.ts);
        t.last_ns = ns;
        if (t.open_with_known_end > 0) close_known_ends(t, ns);
        int64_t known_end = OpenSpan::kNoKnownEnd;
        auto early = early_ends_.find(id);
        if (early != early_ends_.end()) {  // ended on another thread before we read its begin
          known_end = early->second;
          ++t.open_with_known_end;
          early_ends_.erase(early);
        }
        t.open.push_back({id, parent_of_new(t), ns, known_end, stream_->intern(name), static_cast<uint8_t>(aux & 0xFF),
                          activity, true, {}});
        open_api_spans_[id] = {&t};
        break;
      }
      case kTagEndId: {
        int64_t ns = clock_.to_ns(head.ts);
        t.last_ns = ns;
        end_api_span(x[0].ts, ns);
        break;
      }
      case kTagEndDeferred:
        apply_deferred_ends(t, x, extra, aux, head.ts);
        break;
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
        if (t.open_with_known_end > 0) close_known_ends(t, ns);
        append_span(make_span_id(id_salt_, t.index, true, t.next_writer_counter++), parent_of_new(t), ns, ns,
             stream_->intern(bytes(x, aux_name_len(aux))), static_cast<uint8_t>(aux & 0xFF),
             static_cast<uint8_t>(SpanKind::kInstant), {}, t.tid, ActivityType::kAnnotation);
        ++*emitted;
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
        append_span(make_span_id(id_salt_, t.index, true, t.next_writer_counter++), 0, ns, ns,
             stream_->intern(bytes(x + 1, aux)), static_cast<uint8_t>(Level::kApplication),
             static_cast<uint8_t>(SpanKind::kCounter), std::span<const AttrRecord>(&a, 1), t.tid,
             ActivityType::kCounter);
        ++*emitted;
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
        if (r.kind == static_cast<uint8_t>(SpanKind::kSpan) && r.clock == static_cast<uint8_t>(ClockDomain::kMonotonic) &&
            r.device == kNoDevice)
          note_closed(r.tid, r.start_ns, r.end_ns, r.span_id);
        stream_->add_span(r, attrs);
        ++*emitted;
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
      return false;
  }
  return true;
}

void Session::append_span(uint64_t id, uint64_t parent, int64_t start, int64_t end, uint32_t name, uint8_t level,
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
  if (kind == static_cast<uint8_t>(SpanKind::kSpan)) note_closed(tid, start, end, id);
  stream_->add_span(r, attrs);
}

uint64_t Session::parent_of_new(const ThreadState& t) const {
  return t.open.empty() ? context_.parent_span_id : t.open.back().id;
}

void Session::finish_open_spans(ThreadState& t) {
  // Spans still open when the thread or the recording ended: kept, flagged unfinished, counted.
  // Those another thread ended are complete: written with that end.
  for (auto& o : t.open) {
    if (o.known_end != OpenSpan::kNoKnownEnd) emit_open(t, o, o.known_end, 0);
    else emit_open(t, o, t.last_ns, kSpanFlagUnfinished);
    open_api_spans_.erase(o.id);
  }
  t.open.clear();
  t.open_with_known_end = 0;
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
  ThreadState* calling = calling_thread_state();
  // Final pass: everything committed is read; spans still open are written as unfinished.
  take_handoff_ends();
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (ThreadState* t : threads_) {
      drain_thread(*t);
      uint32_t n = t->deferred_count.load(std::memory_order_acquire);
      uint32_t overflow = t->deferred_overflow.load(std::memory_order_acquire);
      if (n > 0 || overflow > 0) {
        if (t->exited.load(std::memory_order_acquire) || t == calling) {
          // Final: the thread is gone, or it is the one stopping the session.
          apply_deferred_ends(*t, t->deferred.get(), n, overflow, t->deferred_overflow_ticks.load(std::memory_order_relaxed));
        } else {
          // Another thread still running: its list may change under us. Its spans close unfinished.
          consumer_drops_[kDropEndLost].fetch_add(n + overflow, std::memory_order_relaxed);
        }
      }
      finish_open_spans(*t);
    }
  }
  consumer_drops_[kDropUnmatchedEnd].fetch_add(early_ends_.size(), std::memory_order_relaxed);
  early_ends_.clear();
  if (WriterPlugin* plugin = plugin_.load(std::memory_order_acquire)) {
    {
      std::lock_guard<std::mutex> lock(threads_mu_);
      plugin_after_drain(INT64_MAX);  // the last spans (those closed unfinished included)
    }
    plugin->write(*stream_, true);
  }
  stream_->flush();
  write_clock_snapshot();
  write_stats(true);
  format::Properties end;
  end.set_int(std::string(format::keys::kEndMonotonicNs), monotonic_ns());
  end.set_int("spans_written", static_cast<int64_t>(stream_->spans_written()));
  const ThreadCounts threads = os_threads(writer_tid());
  if (threads.threads > 0) {
    end.set_int(std::string(format::keys::kEndThreads), threads.threads);
    end.set_int(std::string(format::keys::kEndBusyThreads), threads.busy);
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    end.set_int(std::string(format::keys::kEndCpus), CPU_COUNT(&allowed));
  stream_->write_properties(format::ChunkType::kEnd, end);
  if (stream_->failed())
    error_ = stream_->error() + "; " + std::to_string(stream_->spans_lost()) +
             " spans not written (counted as dropped.write_failed)";
  file_.close();
  // Thread states and blocks stay allocated (the session object is kept alive by the runtime):
  // a thread still inside a span site must never touch freed memory.
}

}  // namespace strata::collect
