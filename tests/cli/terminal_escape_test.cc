// Text from a trace reaches the terminal escaped: no escape sequence, control character, C1
// control, bidirectional override or invalid byte is printed raw.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/analysis.h"  // analysis::Table: the table types now live in table/ (issue 14.4)
#include "export/table_render.h"
#include "export/text_escape.h"

namespace strata::exporter {
namespace {

TEST(TerminalEscape, ControlsAndInvalidBytesAreEscaped) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"aten::conv2d", "aten::conv2d"},
      {"layer\x1b]0;owned\x07", "layer\\x1b]0;owned\\x07"},  // OSC: retitles the window
      {"a\x1b[2J\x1b[Hb", "a\\x1b[2J\\x1b[Hb"},              // clears the screen
      {"line\nnext\r\t", "line\\nnext\\r\\t"},
      {"del\x7f", "del\\x7f"},
      {"c1 \xc2\x9b"
       "31m",
       "c1 \\u009b31m"},          // C1 CSI in UTF-8
      {"raw \x9b", "raw \\x9b"},  // C1 CSI as a lone byte (not UTF-8)
      {"bidi \xe2\x80\xae"
       "evil",
       "bidi \\u202eevil"},                   // RIGHT-TO-LEFT OVERRIDE
      {"iso \xe2\x81\xa6x", "iso \\u2066x"},  // LEFT-TO-RIGHT ISOLATE
      {"overlong \xc0\x80", "overlong \\xc0\\x80"},
      {"surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80"},
      {"cut \xe2\x82", "cut \\xe2\\x82"},
      {"ünïcode ✓ 日本 😀", "ünïcode ✓ 日本 😀"},
      {std::string("nul\0x", 5), "nul\\x00x"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(escape_terminal(c.in), c.out) << c.out;
    EXPECT_EQ(needs_terminal_escape(c.in), c.in != c.out) << c.out;
  }
}

TEST(TerminalEscape, EveryByteValueComesOutPrintable) {
  for (int b = 0; b < 256; ++b) {
    std::string s = escape_terminal(std::string(1, static_cast<char>(b)));
    for (unsigned char c : s) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << b;
  }
}

TEST(TerminalEscape, TextTablesEscapeSpanNamesCsvKeepsThem) {
  analysis::Table t;
  t.name = "layer_table";
  t.title = "layers \x1b[31m";
  t.columns = {"name", "ms"};
  t.rows = {{analysis::Cell::text("evil\x1b[2J\x1b[1;1Hfake row"), analysis::Cell::real(1.5)}};
  t.notes = {"note \x1b]0;x\x07"};
  std::ostringstream text, csv;
  render_table(t, TableFormat::kText, text);
  EXPECT_EQ(text.str().find('\x1b'), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find('\x07'), std::string::npos);
  EXPECT_NE(text.str().find("evil\\x1b[2J"), std::string::npos) << text.str();
  render_table(t, TableFormat::kCsv, csv);  // data formats keep the bytes (CSV/JSON consumers decide)
  EXPECT_NE(csv.str().find("evil\x1b[2J"), std::string::npos);
}

}  // namespace
}  // namespace strata::exporter
