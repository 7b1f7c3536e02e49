#include "export/profile_formats.h"

#include <cstdio>

#include "export/text_escape.h"

namespace strata::exporter {
namespace {

const char* by_name(profile::ProfileBy by) {
  switch (by) {
    case profile::ProfileBy::kOp: return "op";
    case profile::ProfileBy::kLayer: return "layer";
    case profile::ProfileBy::kModule: return "module";
    case profile::ProfileBy::kLine: return "line";
    default: return "function";
  }
}

std::string percent(uint64_t n, uint64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", total ? 100.0 * static_cast<double>(n) / static_cast<double>(total) : 0.0);
  return buf;
}

}  // namespace

std::string format_profile_csv(const profile::Profile& p, const profile::ProfileOptions&) {
  std::string out = "rank,name,where,self,total,self_pct,total_pct,parent\n";
  auto line = [&](size_t rank, const std::string& name, const std::string& where, uint64_t self, uint64_t total,
                  const std::string& parent) {
    out += std::to_string(rank) + ",";
    append_csv_field(&out, name);
    out += ",";
    append_csv_field(&out, where);
    out += "," + std::to_string(self) + "," + std::to_string(total) + "," + percent(self, p.samples) + "," +
           percent(total, p.samples) + ",";
    append_csv_field(&out, parent);
    out += "\n";
  };
  size_t rank = 0;
  for (const profile::ProfileRow& r : p.rows) {
    line(++rank, r.name, r.where, r.self, r.total, "");
    for (const auto& [function, n] : r.culprits) line(rank, function, "", n, n, r.name);
  }
  return out;
}

std::string format_profile_json(const profile::Profile& p, const profile::ProfileOptions& options) {
  std::string out = "{\"by\":\"" + std::string(by_name(options.by)) + "\",\"samples\":" + std::to_string(p.samples) +
                    ",\"period_ns\":" + std::to_string(p.period_ns) + ",\"outside_ops\":" + std::to_string(p.outside_ops) +
                    ",\"no_span\":" + std::to_string(p.no_span) + ",\"rows\":[";
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const profile::ProfileRow& r = p.rows[i];
    out += i ? ",\n{\"name\":" : "\n{\"name\":";
    append_json_string(&out, r.name);
    out += ",\"where\":";
    append_json_string(&out, r.where);
    out += ",\"self\":" + std::to_string(r.self) + ",\"total\":" + std::to_string(r.total) + ",\"culprits\":[";
    for (size_t k = 0; k < r.culprits.size(); ++k) {
      out += k ? ",{\"function\":" : "{\"function\":";
      append_json_string(&out, r.culprits[k].first);
      out += ",\"samples\":" + std::to_string(r.culprits[k].second) + "}";
    }
    out += "]}";
  }
  out += "],\"notes\":[";
  for (size_t i = 0; i < p.notes.size(); ++i) {
    if (i) out += ",";
    append_json_string(&out, p.notes[i]);
  }
  out += "]}\n";
  return out;
}

}  // namespace strata::exporter
