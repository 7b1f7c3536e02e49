// What the report inlines into every HTML file, embedded into the library at build time
// (embed_assets.cmake writes report_assets.cc): Apache ECharts' minified build from report/'s
// npm install (pinned by report/package-lock.json), and the report's own script and style.
#pragma once

#include <string_view>

namespace strata::report::assets {

std::string_view echarts_js();  // empty when this build found no ECharts (see src/report/CMakeLists.txt)
std::string_view echarts_version();
std::string_view report_app_js();  // src/report/report_app.js
std::string_view report_css();     // src/report/report.css

}  // namespace strata::report::assets
