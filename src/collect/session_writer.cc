// The writer thread of a session (consumer side): drains the threads' event blocks, pairs begins and
// ends, assigns ids and parents, and appends chunks to the process's trace file.
#include <algorithm>
#include <cstring>

#include "collect/session.h"
#include "collect/session_internal.h"
#include "core/level.h"
#include "format/payloads.h"

namespace strata::collect {

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
                  uint8_t kind, std::span<const AttrRecord> attrs, uint32_t tid) {
    SpanRecord r;
    r.span_id = id;
    r.parent_id = parent;
    r.start_ns = start;
    r.end_ns = end;
    r.name = name;
    r.tid = tid;
    r.level = level;
    r.kind = kind;
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
      t.open.push_back({make_span_id(id_salt_, t.index, true, t.next_writer_counter++), parent_of_new(), ns,
                        last_loc_name, loc->level, {}});
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
      emit(o.id, o.parent, o.start_ns, ns, o.name, o.level, static_cast<uint8_t>(SpanKind::kSpan), o.attrs, t.tid);
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
        std::string_view name = bytes(x + 1, aux >> 8);
        int64_t ns = clock_.to_ns(head.ts);
        t.last_ns = ns;
        auto early = early_ends_.find(id);
        if (early != early_ends_.end()) {  // ended on another thread before we read its begin
          emit(id, parent_of_new(), ns, early->second, stream_->intern(name), static_cast<uint8_t>(aux & 0xFF),
               static_cast<uint8_t>(SpanKind::kSpan), {}, t.tid);
          early_ends_.erase(early);
          break;
        }
        t.open.push_back({id, parent_of_new(), ns, stream_->intern(name), static_cast<uint8_t>(aux & 0xFF), {}});
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
               owner.tid);
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
             stream_->intern(bytes(x, aux >> 8)), static_cast<uint8_t>(aux & 0xFF),
             static_cast<uint8_t>(SpanKind::kInstant), {}, t.tid);
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
             static_cast<uint8_t>(SpanKind::kCounter), std::span<const AttrRecord>(&a, 1), t.tid);
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
