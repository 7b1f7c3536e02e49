/* A function with two loops of about the same static cost (a few cycles per pass in llvm-mca): one
 * chases pointers through a 64 MiB random cycle (a cache miss on almost every load), the other runs
 * a register-only multiply-add chain eight times as often. Sampled, the chasing loop takes far more
 * samples than its static cost explains: `strata annotate` must rank it as the top culprit.
 * Runs rounds until it has used about 1.5 s of CPU time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ENTRIES (8u << 20) /* 8 Mi entries of 8 bytes: 64 MiB, far beyond any cache */

__attribute__((noinline)) uint64_t chase_and_compute(const uint64_t* next, uint64_t rounds, uint64_t seed) {
  uint64_t p = seed % ENTRIES;
  for (uint64_t i = 0; i < rounds; ++i) p = next[p];
  uint64_t x = seed;
  for (uint64_t i = 0; i < 8 * rounds; ++i) x = x * 0x5bd1e995u + 11;
  return p ^ x;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void) {
  uint64_t* next = malloc(sizeof(uint64_t) * ENTRIES);
  uint64_t* order = malloc(sizeof(uint64_t) * ENTRIES);
  if (next == NULL || order == NULL) return 1;
  /* One random cycle through all entries (Sattolo's shuffle): every load depends on the last. */
  uint64_t state = 88172645463325252ull;
  for (uint64_t i = 0; i < ENTRIES; ++i) order[i] = i;
  for (uint64_t i = ENTRIES - 1; i > 0; --i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    uint64_t j = state % i;
    uint64_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (uint64_t i = 0; i < ENTRIES; ++i) next[order[i]] = order[(i + 1) % ENTRIES];
  free(order);
  const double start = cpu_seconds();
  uint64_t sum = 0, calls = 0;
  while (cpu_seconds() - start < 1.5) {
    sum += chase_and_compute(next, 200000, sum + calls);
    ++calls;
  }
  printf("calls=%llu sum=%llu\n", (unsigned long long)calls, (unsigned long long)sum);
  free(next);
  return 0;
}
