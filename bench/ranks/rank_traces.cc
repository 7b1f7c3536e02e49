#include "rank_traces.h"

#include <cmath>
#include <random>
#include <string>

#include "../analysis/synthetic_trace.h"

namespace strata::bench {

trace::Trace rank_trace(int rank, size_t target_spans) {
  trace::Trace t = synthetic_gpu_trace(target_spans);
  std::mt19937_64 rng(0x5EED + static_cast<uint64_t>(rank));
  std::uniform_real_distribution<double> offset(-5e9, 5e9), drift(-50e-6, 50e-6);
  std::normal_distribution<double> jitter(0, 3000);
  const double off = rank == 0 ? 0 : offset(rng), d = rank == 0 ? 0 : drift(rng);
  for (trace::Process& p : t.processes) {
    p.pid = 1000 + rank;
    p.host = "node" + std::to_string(rank);
    p.properties.set_int("rank", rank);
    p.properties.set_int("world_size", 16);
  }
  const uint32_t allreduce = t.strings.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)");
  int64_t t0 = t.spans.empty() ? 0 : t.spans.front().start_ns;
  size_t kernels = 0;
  for (SpanRecord& s : t.spans) {
    double j = 0;
    if (s.kind == static_cast<uint8_t>(SpanKind::kExecution)) {
      s.activity = static_cast<uint8_t>(ActivityType::kKernel);
      if (kernels++ % 10 == 0) {
        s.activity = static_cast<uint8_t>(ActivityType::kCollective);
        s.name = allreduce;
        j = jitter(rng);
      }
    }
    auto on_clock = [&](int64_t time, double add) {
      return t0 + static_cast<int64_t>(std::llround(off + (static_cast<double>(time - t0) + add) * (1 + d)));
    };
    s.start_ns = on_clock(s.start_ns, 0);
    s.end_ns = on_clock(s.end_ns, j);
  }
  return t;
}

}  // namespace strata::bench
