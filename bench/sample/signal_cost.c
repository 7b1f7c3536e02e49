// The kernel's and the signal's cost per CPU sample in the sampled thread (issue 15,
// docs/performance.md "Per-sample cost in the sampled threads"): N threads run a fixed,
// compute-bound loop at a fixed call depth and report their work rate per thread-CPU second under
//   none     no event;
//   perf     a task-clock sampling event at HZ with a user callchain, inherited by the threads and
//            read from per-CPU rings by a reader thread, as src/sample/perf_sampler.cc configures it;
//   sigtrap  the same event with sigtrap=1 and a handler that only counts its calls (what the
//            kernel's signal delivery and sigreturn cost, with the smallest handler).
// The reader thread is started before the event is opened, so it is not sampled and its CPU is not
// in the workers'. This kernel has no IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING off): the
// overflow interrupt's time is charged to the thread it interrupts, so it is in the workers' CPU.
//
// Paired (PAIRED=CORE in the environment, 2 CPUs): two workers run at the same time, pinned to
// CORE and the other CPU; only the first is sampled (its own event, not inherited, one ring), the
// second is the baseline: machine load and the shared core resources hit both alike, and swapping
// CORE between runs cancels the two CPUs' own difference. Prints "mode paired CORE iterations
// cpu_ns base_iterations base_cpu_ns samples signals lost".
//
// Usage: signal_cost MODE THREADS SECONDS [HZ] [DEPTH]
// Prints one line: "mode threads iterations cpu_ns samples signals lost" (samples: ring records,
// the main thread's few included: it waits in pthread_join; signals: handler calls).
// scripts/sample_signal_cost.sh interleaves the modes, repeats them and turns the rates into ns per sample.
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

enum { kMaxThreads = 64, kMaxCpus = 256, kRingPages = 64 };

static int g_depth = 30;
static double g_seconds = 1.0;
static atomic_int g_stop;
static atomic_ullong g_signals;
static atomic_ullong g_samples, g_lost;
static int g_ncpus;
static int g_fds[kMaxCpus];
static void* g_rings[kMaxCpus];
static long g_page;

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The work: an xorshift step per iteration, at the bottom of DEPTH frames (a callchain as deep as a
// small Python program's native stack), noinline so each frame is real.
__attribute__((noinline)) static uint64_t spin(uint64_t x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

__attribute__((noinline)) static uint64_t descend(int depth, uint64_t x, uint64_t n) {
  if (depth <= 0) return spin(x, n);
  uint64_t r = descend(depth - 1, x + 1, n);
  __asm__ volatile("" : "+r"(r));  // keeps the frame (no tail call)
  return r;
}

struct Worker {
  pthread_t thread;
  uint64_t iterations;
  int64_t cpu_ns;
  uint64_t sink;
  int cpu;      // paired: the CPU it is pinned to
  int sampled;  // paired: opens its own event before the start
  int hz, with_sigtrap;
};

static pthread_barrier_t g_start;  // paired: both workers start together
static int g_paired;
static int open_events(int hz, int with_sigtrap);

static void* work(void* arg) {
  struct Worker* w = arg;
  if (g_paired) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (w->sampled && open_events(w->hz, w->with_sigtrap) != 0) exit(1);
    pthread_barrier_wait(&g_start);
  }
  const uint64_t chunk = 20000;  // ~50 us: the loop's end is checked this often
  const int64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  const int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)(g_seconds * 1e9);
  uint64_t x = 88172645463325252ull, n = 0;
  while (clock_ns(CLOCK_MONOTONIC) < end) {
    x = descend(g_depth, x, chunk);
    n += chunk;
  }
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  w->iterations = n;
  w->sink = x;
  return NULL;
}

static void on_sigtrap(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  if (info->si_code == TRAP_PERF) atomic_fetch_add_explicit(&g_signals, 1, memory_order_relaxed);
}

// Counts the sample and lost records of every ring and frees their space.
static void drain(void) {
  for (int c = 0; c < g_ncpus; ++c) {
    if (g_rings[c] == NULL) continue;
    struct perf_event_mmap_page* meta = g_rings[c];
    const uint64_t size = (uint64_t)kRingPages * (uint64_t)g_page;
    const uint8_t* data = (const uint8_t*)g_rings[c] + g_page;
    const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    while (tail < head) {
      struct perf_event_header h;
      const uint64_t at = tail % size;
      // A header never straddles the ring's end (records are 8-byte aligned, headers 8 bytes).
      memcpy(&h, data + at, sizeof(h));
      if (h.size == 0) break;
      if (h.type == PERF_RECORD_SAMPLE) atomic_fetch_add(&g_samples, 1);
      if (h.type == PERF_RECORD_LOST) {
        uint64_t lost[2];
        const uint64_t from = (at + sizeof(h)) % size;
        if (from + sizeof(lost) <= size) {
          memcpy(lost, data + from, sizeof(lost));
          atomic_fetch_add(&g_lost, lost[1]);
        }
      }
      tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  }
}

static void* read_rings(void* arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) {
    drain();
    usleep(10000);
  }
  drain();
  return NULL;
}

// The recorder's task-clock event (perf_sampler.cc make_attr, frame-pointer callchain mode).
static int open_events(int hz, int with_sigtrap) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof(a));
  a.size = sizeof(a);
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = 1000000000ull / (uint64_t)hz;
  a.sample_type =
      PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  a.exclude_callchain_kernel = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.inherit = g_paired ? 0 : 1;  // paired: the calling worker only
  a.inherit_thread = g_paired ? 0 : 1;
  a.remove_on_exec = 1;
  a.sample_id_all = 1;
  a.watermark = 1;
  a.wakeup_watermark = (uint32_t)(kRingPages * g_page / 2);
  if (with_sigtrap) {
    a.sigtrap = 1;
    a.sig_data = 0x5374726174615059ull;
  }
  for (int c = 0; c < g_ncpus && c < kMaxCpus; ++c) {
    g_fds[c] = (int)syscall(SYS_perf_event_open, &a, 0, g_paired ? -1 : c, -1, PERF_FLAG_FD_CLOEXEC);
    if (g_fds[c] < 0) {
      perror("perf_event_open");
      return -1;
    }
    void* m = mmap(NULL, (size_t)(kRingPages + 1) * (size_t)g_page, PROT_READ | PROT_WRITE, MAP_SHARED,
                   g_fds[c], 0);
    if (m == MAP_FAILED) {
      perror("mmap");
      return -1;
    }
    g_rings[c] = m;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s none|perf|sigtrap THREADS SECONDS [HZ] [DEPTH]\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  const int threads = atoi(argv[2]);
  g_seconds = atof(argv[3]);
  const int hz = argc > 4 ? atoi(argv[4]) : 999;
  if (argc > 5) g_depth = atoi(argv[5]);
  if (threads < 1 || threads > kMaxThreads || g_seconds <= 0 || hz < 1 || g_depth < 0) {
    fprintf(stderr, "signal_cost: bad THREADS (1-%d), SECONDS, HZ or DEPTH\n", kMaxThreads);
    return 2;
  }
  const int perf = strcmp(mode, "perf") == 0, trap = strcmp(mode, "sigtrap") == 0;
  if (!perf && !trap && strcmp(mode, "none") != 0) {
    fprintf(stderr, "signal_cost: MODE must be none, perf or sigtrap (got %s)\n", mode);
    return 2;
  }
  g_page = sysconf(_SC_PAGESIZE);
  g_ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
  const char* paired = getenv("PAIRED");
  int core = 0;
  if (paired != NULL && *paired != '\0') {
    g_paired = 1;
    core = atoi(paired);
    if (g_ncpus < 2 || core < 0 || core > 1) {
      fprintf(stderr, "signal_cost: PAIRED=0|1 needs 2 CPUs (the sampled worker's CPU)\n");
      return 2;
    }
    g_ncpus = 1;  // one per-thread event, one ring
  }
  pthread_t reader;
  pthread_create(&reader, NULL, read_rings, NULL);  // before the event: not sampled
  if (trap) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigtrap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTRAP, &sa, NULL);
  }
  struct Worker workers[kMaxThreads];
  memset(workers, 0, sizeof(workers));
  if (g_paired) {
    pthread_barrier_init(&g_start, NULL, 2);
    workers[0] = (struct Worker){.cpu = core, .sampled = perf || trap, .hz = hz, .with_sigtrap = trap};
    workers[1] = (struct Worker){.cpu = 1 - core};
    for (int t = 0; t < 2; ++t) pthread_create(&workers[t].thread, NULL, work, &workers[t]);
    for (int t = 0; t < 2; ++t) pthread_join(workers[t].thread, NULL);
    for (int c = 0; c < g_ncpus && (perf || trap); ++c) close(g_fds[c]);
    atomic_store(&g_stop, 1);
    pthread_join(reader, NULL);
    printf("%s paired %d %llu %lld %llu %lld %llu %llu %llu\n", mode, core,
           (unsigned long long)workers[0].iterations, (long long)workers[0].cpu_ns,
           (unsigned long long)workers[1].iterations, (long long)workers[1].cpu_ns,
           (unsigned long long)atomic_load(&g_samples), (unsigned long long)atomic_load(&g_signals),
           (unsigned long long)atomic_load(&g_lost));
    if ((workers[0].sink ^ workers[1].sink) == 42) fprintf(stderr, "\n");
    return 0;
  }
  if ((perf || trap) && open_events(hz, trap) != 0) return 1;
  for (int t = 0; t < threads; ++t) pthread_create(&workers[t].thread, NULL, work, &workers[t]);
  uint64_t iterations = 0, sink = 0;
  int64_t cpu_ns = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(workers[t].thread, NULL);
    iterations += workers[t].iterations;
    cpu_ns += workers[t].cpu_ns;
    sink ^= workers[t].sink;
  }
  // No more samples (the rings stay mapped for the last drain).
  for (int c = 0; c < g_ncpus && (perf || trap); ++c) close(g_fds[c]);
  atomic_store(&g_stop, 1);
  pthread_join(reader, NULL);
  printf("%s %d %llu %lld %llu %llu %llu\n", mode, threads, (unsigned long long)iterations, (long long)cpu_ns,
         (unsigned long long)atomic_load(&g_samples), (unsigned long long)atomic_load(&g_signals),
         (unsigned long long)atomic_load(&g_lost));
  if (sink == 42) fprintf(stderr, "\n");  // the work's result is used
  return 0;
}
