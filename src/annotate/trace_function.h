// Finds one function's samples in a loaded trace and reads its bytes from the mapped file: the
// input of annotate_function. Samples are matched by their leaf frame (the sampled PC), named
// through the symbolizer the way `strata profile` names them.
#pragma once

#include <string>
#include <string_view>

#include "annotate/annotate.h"
#include "symbolize/symbolizer.h"
#include "trace/trace.h"

namespace strata::annotate {

// `name`: the symbolized name, or a C++ name without its parameter list ("ns::f" for
// "ns::f(int)"). The module with the most samples of the function wins (the others are noted).
// False with *error (one line: which function, which trace, what to do) when no sample's leaf is
// in a function of that name, or its file cannot be read.
bool find_function_samples(const trace::Trace& trace, std::string_view name,
                           symbolize::Symbolizer& symbolizer, FunctionSamples* out, std::string* error);

}  // namespace strata::annotate
