/* Built without CPython 3.11's headers: no layout, so Python frames are never read (the reader
 * refuses every version). */
#include "sample/python311_layout.h"

const struct strata_py311_layout strata_py311_layout = {.version_major = 0, .version_minor = 0};
