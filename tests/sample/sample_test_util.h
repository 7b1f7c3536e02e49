// Helpers of the sampling tests: paths of the built tools and programs, and a trace's CPU profile.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../test_util.h"
#include "profile/profile.h"
#include "trace/trace.h"
#include "trace/trace_loader.h"

namespace strata::testing {

inline std::string bin(const std::string& name) { return std::string(STRATA_BINARY_DIR) + "/bin/" + name; }
inline std::string strata_tool() { return bin("strata"); }

// Shares (percent of all samples of event 0) per function: self and total.
struct Shares {
  uint64_t samples = 0;
  std::map<std::string, double> self, total;
};

inline Shares function_shares(const std::string& trace_path) {
  Shares out;
  trace::Trace trace;
  std::string error;
  EXPECT_TRUE(trace::load_trace(trace_path, &trace, &error)) << error;
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  profile::ProfileOptions options;
  profile::Profile p = profile::build_profile(trace, options, namer);
  out.samples = p.samples;
  for (const profile::ProfileRow& r : p.rows) {
    out.self[r.name] = p.samples ? 100.0 * static_cast<double>(r.self) / static_cast<double>(p.samples) : 0;
    out.total[r.name] = p.samples ? 100.0 * static_cast<double>(r.total) / static_cast<double>(p.samples) : 0;
  }
  return out;
}

}  // namespace strata::testing
