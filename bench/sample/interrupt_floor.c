// Preloaded into a program (scripts/sample_overhead.sh, CONCURRENT_FLOOR=1): what periodic
// interruptions cost the program with no profiler around them, the floor under any sampler's
// overhead at the same rate (issue 15). Two kinds, chosen by the environment:
//   STRATA_FLOOR_PERF_HZ=N  a task-clock sampling event at N Hz on the process and its threads
//                           (what `strata record --sample` and `perf record` open), with no ring
//                           buffer and no reader: the overflow interrupt and the timer's re-arming,
//                           nothing written, nothing unwound, no signal.
//   STRATA_FLOOR_WAKE_HZ=N  a thread of the process that wakes N times a second and does nothing:
//                           the same number of timer interrupts and two context switches each,
//                           without perf_event.
// A failure is one line on stderr and the program runs unobserved (the pair then shows ~x1.00).
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long g_wake_period_ns;

static void* wake_loop(void* unused) {
  (void)unused;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (;;) {
    next.tv_nsec += g_wake_period_ns;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      ++next.tv_sec;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  return NULL;
}

static long rate_from_env(const char* name) {
  const char* text = getenv(name);
  if (text == NULL) return 0;
  char* end = NULL;
  long hz = strtol(text, &end, 10);
  if (end == text || *end != '\0' || hz <= 0 || hz > 100000) {
    fprintf(stderr, "interrupt_floor: %s=%s is not a rate in Hz (1-100000); ignored\n", name, text);
    return 0;
  }
  return hz;
}

__attribute__((constructor)) static void interrupt_floor_start(void) {
  long perf_hz = rate_from_env("STRATA_FLOOR_PERF_HZ");
  long wake_hz = rate_from_env("STRATA_FLOOR_WAKE_HZ");
  // Children the program starts are not part of the measurement.
  unsetenv("LD_PRELOAD");
  unsetenv("STRATA_FLOOR_PERF_HZ");
  unsetenv("STRATA_FLOOR_WAKE_HZ");
  if (perf_hz > 0) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (unsigned long long)(1000000000L / perf_hz);
    a.sample_type = PERF_SAMPLE_IP;
    a.inherit = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0)
      fprintf(stderr, "interrupt_floor: perf_event_open(task-clock, %ld Hz): %s; running unobserved\n",
              perf_hz, strerror(errno));
  }
  if (wake_hz > 0) {
    g_wake_period_ns = 1000000000L / wake_hz;
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, wake_loop, NULL);
    if (rc != 0)
      fprintf(stderr, "interrupt_floor: pthread_create: %s; running unobserved\n", strerror(rc));
    else
      pthread_detach(thread);
  }
}
