// W3C trace-context parsing (`traceparent`). The end-to-end propagation through `strata record` is in
// record_test.cc: this binary does not need the tool, so the ThreadSanitizer phase builds it alone.
#include <gtest/gtest.h>

#include "collect/trace_context.h"

namespace strata {
namespace {

TEST(TraceContext, ParsesValidTraceparent) {
  auto ctx = collect::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(ctx.has_value());
  EXPECT_EQ(ctx->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(ctx->parent_span_id, 0x00f067aa0ba902b7ull);
  EXPECT_EQ(ctx->traceparent(0), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(ctx->traceparent(0x1234), "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000001234-01");
  // A future version may append fields.
  EXPECT_TRUE(collect::parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz").has_value());
}

TEST(TraceContext, RejectsMalformedTraceparent) {
  for (const char* bad : {
           "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",          // too short
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",           // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",           // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",           // zero parent
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",           // forbidden version
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",     // v00 must be exact
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(collect::parse_traceparent(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace strata
