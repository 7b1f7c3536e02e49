// The same span site compiled with STRATA_ENABLED=0: the macro must vanish entirely.
#define STRATA_ENABLED 0
#include "strata/strata.hpp"

int compiled_out_site(int x) {
  STRATA_SPAN("compiled_out", layer);
  return x + 1;
}
