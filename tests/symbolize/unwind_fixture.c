// The fixture of symbolize_test: hundreds of small static functions of varied sizes (some with a
// cold part, which GCC places in its own .text.unlikely function with its own FDE), built with
// unwind tables and then stripped. The test checks that the stripped copy's unwind tables give every
// function of the unstripped copy's .symtab the same start.
#include <stdio.h>
#include <stdlib.h>

#define FN(n)                                                               \
  static __attribute__((noinline)) int fn_##n(int x) {                      \
    int acc = n;                                                            \
    for (int i = 0; i < x % (n % 7 + 2); ++i) acc = acc * (n % 13 + 3) + i; \
    if ((n) % 3 == 0)                                                       \
      for (int i = 0; i < x; ++i) acc ^= (acc << (n % 5 + 1)) + i * n;      \
    if ((n) % 4 == 0 && __builtin_expect(x == 1000003 + (n), 0)) {          \
      fprintf(stderr, "fixture: unexpected input %d in %d\n", x, n);        \
      abort();                                                              \
    }                                                                       \
    return acc;                                                             \
  }
#define FN10(p) FN(p##0) FN(p##1) FN(p##2) FN(p##3) FN(p##4) FN(p##5) FN(p##6) FN(p##7) FN(p##8) FN(p##9)
#define REF(n) fn_##n,
#define REF10(p) \
  REF(p##0) REF(p##1) REF(p##2) REF(p##3) REF(p##4) REF(p##5) REF(p##6) REF(p##7) REF(p##8) REF(p##9)

FN10(1)
FN10(2) FN10(3) FN10(4) FN10(5) FN10(6) FN10(7) FN10(8) FN10(9) FN10(10) FN10(11) FN10(12) FN10(13) FN10(14)
    FN10(15) FN10(16) FN10(17) FN10(18) FN10(19) FN10(20) FN10(21) FN10(22) FN10(23) FN10(24) FN10(25)
        FN10(26) FN10(27) FN10(28) FN10(29)

            static int (*const table[])(int) = {
                REF10(1) REF10(2) REF10(3) REF10(4) REF10(5) REF10(6) REF10(7) REF10(8) REF10(9) REF10(10)
                    REF10(11) REF10(12) REF10(13) REF10(14) REF10(15) REF10(16) REF10(17) REF10(18) REF10(19)
                        REF10(20) REF10(21) REF10(22) REF10(23) REF10(24) REF10(25) REF10(26) REF10(27)
                            REF10(28) REF10(29)};

int main(int argc, char** argv) {
  (void)argv;
  int sum = 0;
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); ++i) sum += table[i](argc);
  printf("%d\n", sum);
  return 0;
}
