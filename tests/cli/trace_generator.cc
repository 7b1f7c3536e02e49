#include "trace_generator.h"

#include <memory>
#include <random>
#include <vector>

#include "core/level.h"
#include "core/span_record.h"
#include "format/chunk_writer.h"
#include "format/payloads.h"
#include "format/stream_writer.h"

namespace strata::testing {
namespace {

constexpr const char* kLayerNames[] = {"aten::conv2d", "aten::batch_norm", "aten::relu",   "aten::linear",
                                       "aten::lstm",   "aten::add_",       "aten::matmul", "aten::softmax"};
constexpr const char* kLibraryNames[] = {"brg_conv_fwd:avx512_core", "gemm:jit", "eltwise_fwd:jit",
                                         "bnorm_fwd:jit", "reorder:simple"};

// One process: its writer, clock and the time its threads have reached.
struct GenProcess {
  std::unique_ptr<format::StreamWriter> writer;
  int64_t pid = 0;
  int64_t now_ns = 0;
  uint64_t next_id = 1;
  uint64_t spans = 0;
  uint32_t names_layer[8] = {}, names_library[5] = {}, name_step = 0, key_shape = 0, key_bytes = 0;
};

void write_header(GenProcess& p, int index) {
  namespace k = format::keys;
  format::Properties props;
  props.set_int(std::string(k::kPid), p.pid);
  props.set_int(std::string(k::kPpid), index == 0 ? 1 : 1000);
  props.set(std::string(k::kHost), "generated");
  props.set(std::string(k::kArgv), std::string("python3\0train.py\0--worker\0") + std::to_string(index));
  props.set(std::string(k::kTraceId), "0123456789abcdef0123456789abcdef");
  props.set_int(std::string(k::kStartRealtimeNs), 1'700'000'000'000'000'000 + p.now_ns);
  props.set_int(std::string(k::kStartMonotonicNs), p.now_ns);
  props.set_int(std::string(k::kLevel), static_cast<int>(Level::kLibrary));
  props.set(std::string(k::kClockDomains), "0=monotonic,1=realtime,2=tsc");
  props.set(std::string(k::kTscNsPerTick), "0.4");
  props.set_int(std::string(k::kTscAnchorTicks), 0);
  props.set_int(std::string(k::kTscAnchorNs), 0);
  props.set_int("buffer_bytes", 64 << 20);
  p.writer->write_properties(format::ChunkType::kProcess, props);
}

// The tick clock runs 20 ppm faster than the collector's start-up calibration assumed.
void write_snapshot(GenProcess& p) {
  format::ClockReading r[2];
  r[0] = {static_cast<uint32_t>(ClockDomain::kMonotonic), 0, p.now_ns};
  r[1] = {static_cast<uint32_t>(ClockDomain::kTsc), 0,
          static_cast<int64_t>(static_cast<double>(p.now_ns) / 0.4 * 1.00002)};
  p.writer->write_clock_snapshot(r);
}

SpanRecord make_span(GenProcess& p, uint32_t name, uint64_t parent, int64_t start, int64_t end, uint8_t level,
                     uint32_t tid) {
  SpanRecord s;
  s.span_id = p.next_id++;
  s.parent_id = parent;
  s.start_ns = start;
  s.end_ns = end;
  s.name = name;
  s.tid = tid;
  s.level = level;
  s.kind = static_cast<uint8_t>(SpanKind::kSpan);
  s.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  s.flags = kSpanFlagFromTicks;
  return s;
}

// One training step on one thread: a model span holding layer ops, some with a library call.
void write_step(GenProcess& p, uint32_t tid, std::mt19937_64& rng, uint64_t budget) {
  const int64_t step_start = p.now_ns;
  SpanRecord step = make_span(p, p.name_step, 0, step_start, 0, static_cast<uint8_t>(Level::kModel), tid);
  std::vector<SpanRecord> inner;
  std::vector<std::vector<AttrRecord>> inner_attrs;
  int64_t t = step_start + 1000;
  const int ops = static_cast<int>(std::min<uint64_t>(budget > 1 ? budget - 1 : 0, 6 + rng() % 20));
  for (int i = 0; i < ops && inner.size() + 1 < budget; ++i) {
    const int64_t dur = 2000 + static_cast<int64_t>(rng() % 50000);
    SpanRecord op = make_span(p, p.names_layer[rng() % 8], step.span_id, t, t + dur,
                              static_cast<uint8_t>(Level::kLayer), tid);
    std::vector<AttrRecord> attrs;
    AttrRecord shape;
    shape.key = p.key_shape;
    shape.type = static_cast<uint8_t>(AttrType::kString);
    shape.value.u = p.names_layer[rng() % 8];
    AttrRecord bytes;
    bytes.key = p.key_bytes;
    bytes.type = static_cast<uint8_t>(AttrType::kInt);
    bytes.value.i = static_cast<int64_t>(rng() % 1000000);
    attrs = {shape, bytes};
    inner.push_back(op);
    inner_attrs.push_back(attrs);
    if (rng() % 2 == 0 && inner.size() + 1 < budget) {
      inner.push_back(make_span(p, p.names_library[rng() % 5], op.span_id, t + 100, t + dur - 100,
                                static_cast<uint8_t>(Level::kLibrary), tid));
      inner_attrs.emplace_back();
    }
    t += dur + 500;
  }
  step.end_ns = t + 1000;
  p.writer->add_span(step);
  for (size_t i = 0; i < inner.size(); ++i) p.writer->add_span(inner[i], inner_attrs[i]);
  p.spans += 1 + inner.size();
  p.now_ns = step.end_ns + 2000;
}

}  // namespace

bool generate_trace(const std::string& path, const GeneratorOptions& opt, GeneratedTrace* out,
                    std::string* error) {
  format::ChunkWriter file;
  if (!file.open(path)) {
    *error = file.error();
    return false;
  }
  std::mt19937_64 rng(opt.seed);
  std::vector<GenProcess> procs(static_cast<size_t>(opt.processes));
  for (int i = 0; i < opt.processes; ++i) {
    GenProcess& p = procs[static_cast<size_t>(i)];
    p.writer =
        std::make_unique<format::StreamWriter>(&file, 0x1000 + static_cast<uint64_t>(i) * 7919, 0, 4096);
    p.pid = 4000 + i;
    p.now_ns = 1'000'000'000 + i * 1000;
    write_header(p, i);
    write_snapshot(p);
    for (int k = 0; k < 8; ++k) p.names_layer[k] = p.writer->intern(kLayerNames[k]);
    for (int k = 0; k < 5; ++k) p.names_library[k] = p.writer->intern(kLibraryNames[k]);
    p.name_step = p.writer->intern("train_step");
    p.key_shape = p.writer->intern("input_shapes");
    p.key_bytes = p.writer->intern("alloc_bytes");
  }
  uint64_t written = 0;
  int64_t next_snapshot = 1'000'000'000;
  for (uint64_t step = 0; written < opt.spans; ++step) {
    GenProcess& p = procs[step % procs.size()];
    uint64_t before = p.spans;
    write_step(p, static_cast<uint32_t>(p.pid * 10 + static_cast<int64_t>(step % opt.threads_per_process)),
               rng, opt.spans - written);
    written += p.spans - before;
    if (p.now_ns > next_snapshot) {  // about one snapshot per simulated second, as the collector does
      for (GenProcess& q : procs) write_snapshot(q);
      next_snapshot += 1'000'000'000;
    }
  }
  for (GenProcess& p : procs) {
    p.writer->flush();
    write_snapshot(p);
    format::Properties stats;
    stats.set_int("dropped.buffer_full", static_cast<int64_t>(p.pid % 7));
    stats.set_int("dropped.end_lost", 0);
    stats.set_int("spans_written", static_cast<int64_t>(p.spans));
    p.writer->write_properties(format::ChunkType::kStats, stats);
    if (opt.finish_streams) p.writer->write_properties(format::ChunkType::kEnd, format::Properties());
    if (p.writer->failed()) {
      *error = p.writer->error();
      return false;
    }
  }
  out->spans = written;
  out->bytes = file.bytes_written();
  file.close();
  return true;
}

}  // namespace strata::testing
