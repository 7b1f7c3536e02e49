/* A program whose CPU time splits 60/30/10% over three functions, run under `strata record --sample`
 * and `strata attach` by the sampling tests.
 *   burn_program leaf SECONDS     three leaf functions (leaf_sixty/thirty/ten) loop themselves:
 *                                 the leaf IP names them, so frame-pointer stacks suffice
 *   burn_program callers SECONDS  call_sixty/thirty/ten all call one leaf (spin): only an unwinder that
 *                                 recovers the leaf's caller (DWARF; GCC omits the leaf's frame
 *                                 pointer) attributes the time to them
 *   burn_program loop SECONDS CODE  `callers` work, printing one numbered line per 50 ms of wall time,
 *                                 then exits with CODE (the attach tests check output and status)
 * SECONDS is CPU time for leaf/callers (the shares hold on a loaded machine), wall time for loop.
 * leaf/callers end with "cpu_ns: total=N sixty=N thirty=N ten=N" on stderr: the thread CPU time each
 * function took, measured around every call. The tests compare the sampled shares with these (the
 * split moves by a point or two from run to run on a shared VM, for perf as for Strata). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;
/* Iterations per tenth of a round, drawn anew each round (4000-16000): a round lasts ~60-250 us, far
 * below the sampling period, and its varying length keeps the period from aliasing with the loop
 * (a fixed round near a rational fraction of the period would sample a few phases only). */
static int unit = 10000;
static uint64_t next_unit(void) {
  static uint64_t state = 88172645463325252ull;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return 4000 + state % 12001;
}

#define LCG(x) ((x) * 6364136223846793005ull + 1442695040888963407ull)

__attribute__((noinline)) void leaf_sixty(void) {
  uint64_t x = sink;
  for (int i = 0; i < 6 * unit; ++i) x = LCG(x);
  sink = x;
}
__attribute__((noinline)) void leaf_thirty(void) {
  uint64_t x = sink;
  for (int i = 0; i < 3 * unit; ++i) x = LCG(x);
  sink = x;
}
__attribute__((noinline)) void leaf_ten(void) {
  uint64_t x = sink;
  for (int i = 0; i < unit; ++i) x = LCG(x);
  sink = x;
}

__attribute__((noinline)) uint64_t spin(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) x = LCG(x);
  return x;
}
__attribute__((noinline)) void call_sixty(void) { sink = spin(6 * unit, sink) + 1; }
__attribute__((noinline)) void call_thirty(void) { sink = spin(3 * unit, sink) + 1; }
__attribute__((noinline)) void call_ten(void) { sink = spin(unit, sink) + 1; }

static double seconds_of(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: burn_program leaf|callers SECONDS | loop SECONDS CODE\n");
    return 2;
  }
  const double seconds = atof(argv[2]);
  if (strcmp(argv[1], "loop") == 0) {
    const int code = argc > 3 ? atoi(argv[3]) : 0;
    const double start = seconds_of(CLOCK_MONOTONIC);
    double next = start;
    for (unsigned line = 0;;) {
      call_sixty();
      call_thirty();
      call_ten();
      const double now = seconds_of(CLOCK_MONOTONIC);
      if (now >= next) {
        printf("line %u\n", line++);
        fflush(stdout);
        next += 0.05;
      }
      if (now - start >= seconds) break;
    }
    printf("end\n");
    return code;
  }
  const int leaf = strcmp(argv[1], "leaf") == 0;
  void (*const functions[3])(void) = {leaf ? leaf_sixty : call_sixty, leaf ? leaf_thirty : call_thirty,
                                      leaf ? leaf_ten : call_ten};
  double spent[3] = {0, 0, 0};
  const double start = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
  while (seconds_of(CLOCK_PROCESS_CPUTIME_ID) - start < seconds) {
    for (int k = 0; k < 10; ++k) {
      unit = (int)next_unit();
      for (int f = 0; f < 3; ++f) {
        const double before = seconds_of(CLOCK_THREAD_CPUTIME_ID);
        functions[f]();
        spent[f] += seconds_of(CLOCK_THREAD_CPUTIME_ID) - before;
      }
    }
  }
  const double total = seconds_of(CLOCK_PROCESS_CPUTIME_ID) - start;
  fprintf(stderr, "cpu_ns: total=%.0f sixty=%.0f thirty=%.0f ten=%.0f\n", total * 1e9, spent[0] * 1e9, spent[1] * 1e9,
          spent[2] * 1e9);
  printf("done %d\n", (int)(sink & 1));
  return 0;
}
