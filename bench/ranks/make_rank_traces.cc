// Writes the generated ranks of one job (rank_traces.h), one native file per rank, for the
// full-size merge benchmark (scripts/bench_ranks.sh):  make_rank_traces RANKS SPANS_PER_RANK DIR
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rank_traces.h"
#include "trace/trace_saver.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_rank_traces RANKS SPANS_PER_RANK DIR\n");
    return 2;
  }
  const int ranks = std::atoi(argv[1]);
  const size_t spans = std::strtoull(argv[2], nullptr, 10);
  for (int r = 0; r < ranks; ++r) {
    const std::string path = std::string(argv[3]) + "/rank" + std::to_string(r) + ".strata";
    std::string error;
    if (!strata::trace::save_trace(strata::bench::rank_trace(r, spans), path, &error)) {
      std::fprintf(stderr, "make_rank_traces: %s\n", error.c_str());
      return 1;
    }
  }
  return 0;
}
