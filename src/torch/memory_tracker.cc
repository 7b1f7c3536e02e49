// Memory accounting of the PyTorch layer tracer: see memory_tracker.h and docs/memory.md.
//
// The bridge's wrapper around PyTorch's CPU allocator (bridge/torch_bridge.cc) hands out the inner
// allocator's memory under on_free (so frees come back here); this file remembers each live block's
// size and the inner deleter in a table. Nothing here includes PyTorch: the bridge is compiled
// against the user's torch, this is built with Strata.
//
// One mutex guards the table, the live level and the timeline: PyTorch's own memory profiler takes
// one per allocation as well, and tensor allocations come almost only from the thread running the
// ops. The per-op sums are thread-local and take no lock.
#include "torch/memory_tracker.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "collect/runtime.h"
#include "collect/session.h"
#include "core/activity_type.h"
#include "core/env_vars.h"
#include "core/level.h"
#include "core/memory_keys.h"
#include "strata/detail/hot_path.h"
#include "torch/block_table.h"

namespace strata::torch_tracer {
namespace {

// --- The memory timeline --------------------------------------------------------------------------
// Samples of the live level go out as counter records. A change at least `interval` after the last
// emission is emitted at once, together with what was held back since: the highest level of the
// held-back changes and the last one, each at its own time. So the track is exact at every emitted
// time, never misses an interval's maximum, and has at most three samples per interval.
struct Sample {
  int64_t bytes = 0;
  uint64_t ticks = 0;
};

struct Tracker {
  std::mutex mu;
  BlockTable blocks;
  int64_t live = 0;
  int64_t peak_live = 0;
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t untracked_frees = 0;
  int64_t samples = 0;
  // Timeline state.
  uint64_t interval_ticks = 0;
  uint64_t last_emit_ticks = 0;
  bool emitted_any = false;
  bool held = false;  // changes since the last emission not yet written
  Sample held_max, held_last;
  std::string counter_name;
};

// Leaked on purpose: frees can come after static destructors (tensors released at exit).
Tracker* g_tracker = nullptr;
std::atomic<bool> g_tracking{false};
std::atomic<int64_t> g_ops_too_deep{0};
strata_torch_deleter g_inner_raw_deleter = nullptr;

constexpr std::string_view kAllocator = "PyTorch CPU allocator";
constexpr std::string_view kDevice = "cpu";

void emit_sample(Tracker& t, const Sample& s) {
  collect::Session* session = collect::current_session();
  if (session == nullptr) return;
  SpanRecord r;
  r.start_ns = r.end_ns = session->ticks_to_ns(s.ticks);
  r.level = static_cast<uint8_t>(Level::kApplication);
  r.kind = static_cast<uint8_t>(SpanKind::kCounter);
  r.activity = static_cast<uint8_t>(ActivityType::kCounter);
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  r.flags = kSpanFlagFromTicks;
  collect::AttrDraft attrs[3];
  attrs[0].key = "value";
  attrs[0].type = AttrType::kMetric;
  attrs[0].d = static_cast<double>(s.bytes);
  attrs[1].key = memory_keys::kCounterAllocator;
  attrs[1].type = AttrType::kString;
  attrs[1].s = kAllocator;
  attrs[2].key = memory_keys::kCounterDevice;
  attrs[2].type = AttrType::kString;
  attrs[2].s = kDevice;
  session->emit_complete(r, t.counter_name, attrs);
  ++t.samples;
}

// Writes the held-back changes (their maximum first when it came before the last one).
void emit_held(Tracker& t) {
  if (!t.held) return;
  if (t.held_max.ticks < t.held_last.ticks && t.held_max.bytes > t.held_last.bytes)
    emit_sample(t, t.held_max);
  emit_sample(t, t.held_last);
  t.held = false;
}

// The live level changed to t.live now (under t.mu).
void on_level_change(Tracker& t) {
  const uint64_t now = detail::now_ticks();
  const Sample current{t.live, now};
  if (!t.emitted_any || now - t.last_emit_ticks >= t.interval_ticks) {
    emit_held(t);
    emit_sample(t, current);
    t.last_emit_ticks = now;
    t.emitted_any = true;
    return;
  }
  if (!t.held || current.bytes > t.held_max.bytes) t.held_max = current;
  t.held_last = current;
  t.held = true;
}

// --- Per-thread open ops ---------------------------------------------------------------------------
// Values on a fixed per-thread stack, not pointers: an op whose end is reported on another thread
// leaves a stale entry that its ancestor's end folds in, never a dangling pointer; and no
// thread_local destructor runs, so an allocation during thread teardown is still safe.
constexpr uint32_t kMaxOpenOps = 64;
thread_local OpMemory t_open[kMaxOpenOps];
thread_local uint32_t t_depth = 0;

void note_alloc_on_thread(int64_t n, int64_t live_after) {
  uint32_t d = t_depth;
  if (d == 0) return;
  OpMemory& op = t_open[d - 1];
  op.alloc += n;
  op.self_net += n;
  op.peak = std::max(op.peak, op.alloc - op.freed);
  op.peak_live = std::max(op.peak_live, live_after);
}

void note_free_on_thread(int64_t n) {
  uint32_t d = t_depth;
  if (d == 0) return;
  OpMemory& op = t_open[d - 1];
  op.freed += n;
  op.self_net -= n;
}

// A nested op ended: its totals become part of its parent's.
void fold_into(OpMemory& parent, const OpMemory& child) {
  parent.peak = std::max(parent.peak, parent.alloc - parent.freed + child.peak);
  parent.alloc += child.alloc;
  parent.freed += child.freed;
  parent.peak_live = std::max(parent.peak_live, child.peak_live);
}

// A fork while another thread holds the mutex must not leave the child's copy locked.
void before_fork() {
  if (g_tracker != nullptr) g_tracker->mu.lock();
}
void after_fork_parent() {
  if (g_tracker != nullptr) g_tracker->mu.unlock();
}
void after_fork_child() {
  if (g_tracker == nullptr) return;
  // The child's trace starts its own timeline: the parent's held-back samples are the parent's.
  g_tracker->held = false;
  g_tracker->emitted_any = false;
  g_tracker->samples = 0;
  g_tracker->mu.unlock();
}

uint64_t interval_ticks_from_env() {
  double us = 100;
  if (const char* v = std::getenv(env::kMemoryIntervalUs)) {
    char* end = nullptr;
    double parsed = std::strtod(v, &end);
    if (end != v && *end == '\0' && parsed >= 0 && parsed <= 1e9)
      us = parsed;
    else
      std::fprintf(stderr,
                   "strata: STRATA_MEMORY_INTERVAL_US=%s is not a number of microseconds >= 0; using 100\n",
                   v);
  }
  collect::Session* session = collect::current_session();
  // Ticks per us from the session's calibration (ns per tick); without a session, 1 tick = 1 ns.
  double ns_per_tick = 1.0;
  if (session != nullptr) {
    uint64_t t0 = 0, t1 = 1'000'000'000;
    double ns = static_cast<double>(session->ticks_to_ns(t1) - session->ticks_to_ns(t0));
    if (ns > 0) ns_per_tick = ns / static_cast<double>(t1 - t0);
  }
  return static_cast<uint64_t>(us * 1000.0 / ns_per_tick);
}

}  // namespace

bool on_alloc(void* data, int64_t size, void* inner_context, strata_torch_deleter inner_deleter) {
  if (data == nullptr || g_tracker == nullptr || !g_tracking.load(std::memory_order_relaxed)) return false;
  Block b;
  b.address = reinterpret_cast<uintptr_t>(data);
  b.size = size;
  b.inner_context = inner_context;
  b.inner_deleter = inner_deleter;
  int64_t live_after = 0;
  {
    std::lock_guard<std::mutex> lock(g_tracker->mu);
    try {
      g_tracker->blocks.insert(b);  // throws only before anything changed: the caller keeps the block
    } catch (const std::bad_alloc&) {
      return false;
    }
    Tracker& t = *g_tracker;
    t.live += b.size;
    t.peak_live = std::max(t.peak_live, t.live);
    ++t.allocations;
    live_after = t.live;
    on_level_change(t);
  }
  note_alloc_on_thread(b.size, live_after);
  return true;
}

void on_free(void* data) {
  if (data == nullptr) return;
  Block b;
  bool found = false;
  if (g_tracker != nullptr) {
    std::lock_guard<std::mutex> lock(g_tracker->mu);
    Tracker& t = *g_tracker;
    found = t.blocks.take(reinterpret_cast<uintptr_t>(data), &b);
    if (found) {
      t.live -= b.size;
      ++t.frees;
      on_level_change(t);
    } else {
      ++t.untracked_frees;
    }
  }
  if (!found) {  // raw_allocate'd while tracking was off: the inner allocator's block
    if (g_inner_raw_deleter != nullptr) g_inner_raw_deleter(data);
    return;
  }
  note_free_on_thread(b.size);
  if (b.inner_deleter != nullptr) b.inner_deleter(b.inner_context);
}

void start_memory_tracking(strata_torch_deleter inner_raw_deleter) {
  if (g_tracker == nullptr) {
    g_tracker = new Tracker();
    g_tracker->counter_name = memory_keys::counter_name(kAllocator, kDevice);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  }
  if (inner_raw_deleter != nullptr) g_inner_raw_deleter = inner_raw_deleter;
  {
    std::lock_guard<std::mutex> lock(g_tracker->mu);
    g_tracker->interval_ticks = interval_ticks_from_env();
    g_tracker->emitted_any = false;
  }
  g_tracking.store(true, std::memory_order_relaxed);
}

void stop_memory_tracking() {
  if (g_tracker == nullptr) return;
  g_tracking.store(false, std::memory_order_relaxed);
  MemoryStats s;
  {
    std::lock_guard<std::mutex> lock(g_tracker->mu);
    emit_held(*g_tracker);
  }
  s = memory_stats();
  if (collect::Session* session = collect::current_session()) {
    auto put = [&](const char* key, int64_t v) { session->set_collector_property(key, std::to_string(v)); };
    put("torch.memory.allocations", s.allocations);
    put("torch.memory.frees", s.frees);
    put("torch.memory.peak_live_bytes", s.peak_live_bytes);
    put("torch.memory.timeline_samples", s.timeline_samples);
    put("torch.memory.ops_too_deep", s.ops_too_deep);
    put("torch.memory.untracked_frees", s.untracked_frees);
  }
}

uint32_t push_op(strata_span_id span) {
  uint32_t d = t_depth;
  if (d >= kMaxOpenOps) {
    g_ops_too_deep.fetch_add(1, std::memory_order_relaxed);
    return UINT32_MAX;
  }
  t_open[d] = OpMemory{};
  t_open[d].span = span;
  t_depth = d + 1;
  return d;
}

bool pop_op(uint32_t depth, strata_span_id span, OpMemory* out) {
  if (depth >= t_depth || t_open[depth].span != span) return false;  // ended on another thread
  // Entries above it belong to ops that ended on another thread: each folds into its parent.
  for (uint32_t k = t_depth - 1; k > depth; --k) fold_into(t_open[k - 1], t_open[k]);
  *out = t_open[depth];
  t_depth = depth;
  if (depth > 0) fold_into(t_open[depth - 1], *out);
  return true;
}

bool memory_tracking() { return g_tracking.load(std::memory_order_relaxed); }

MemoryStats memory_stats() {
  MemoryStats s;
  s.ops_too_deep = g_ops_too_deep.load(std::memory_order_relaxed);
  s.tracking = g_tracking.load(std::memory_order_relaxed) ? 1 : 0;
  if (g_tracker == nullptr) return s;
  std::lock_guard<std::mutex> lock(g_tracker->mu);
  const Tracker& t = *g_tracker;
  s.live_bytes = t.live;
  s.peak_live_bytes = t.peak_live;
  s.allocations = t.allocations;
  s.frees = t.frees;
  s.timeline_samples = t.samples;
  s.untracked_frees = t.untracked_frees;
  return s;
}

}  // namespace strata::torch_tracer
