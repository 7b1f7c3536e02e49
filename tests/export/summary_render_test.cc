// `strata summary`'s table on the terminal: top-op names sharing long starts and ends are shortened
// without two rows reading the same, and each keeps the part that tells it apart.
#include "export/summary_render.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "analysis/run_summary.h"

namespace strata::testing {
namespace {

std::vector<std::string> top_op_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text.substr(text.find("Top ops by self time")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line))
    if (line.rfind("  ", 0) == 0) lines.push_back(line.substr(2, 56));
  return lines;
}

TEST(SummaryRender, TopOpNamesSharingLongStartsAndEndsNeverReadTheSame) {
  const std::string head =
      "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, ";
  const std::string tail =
      ">, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float>)";
  trace::Trace trace;
  trace::Process p;
  p.pid = 7;
  trace.add_process(p);
  analysis::RunSummary s;
  for (const char* middle : {"MulFunctor", "DivFunctor", "AddFunctor", "SubFunctor"}) {
    analysis::TopOp op;
    op.name = head + middle + tail;
    op.self_ms = 1;
    s.top_ops.push_back(op);
  }
  std::ostringstream out;
  exporter::render_summary(trace, s, exporter::SummaryFormat::kTable, out);
  const std::vector<std::string> lines = top_op_lines(out.str());
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()).size(), 4u) << out.str();
  const char* middles[] = {"Mul", "Div", "Add", "Sub"};
  for (size_t k = 0; k < 4; ++k) EXPECT_NE(lines[k].find(middles[k]), std::string::npos) << lines[k];
}

}  // namespace
}  // namespace strata::testing
