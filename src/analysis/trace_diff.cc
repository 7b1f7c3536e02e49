#include "analysis/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "analysis/mann_whitney.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "core/memory_keys.h"

namespace strata::analysis {
namespace {

// One side's measurements of one item.
struct Samples {
  uint8_t level = 0;
  std::string name, shapes, module;
  std::vector<double> run_ns, run_count, run_alloc;  // one per run
  std::vector<std::vector<double>> run_instances;   // instance durations, per run
  std::vector<double> instance_ns;                   // every instance, all runs
};

struct Side {
  int runs = 1;
  std::unordered_map<std::string, Samples> items;
  std::vector<double> run_total_ns;
};

// Runs of a trace: processes tagged "run" (strata record --runs N), in tag order; untagged: one run.
std::vector<int> run_of_process(const trace::Trace& trace, int* runs) {
  std::map<int64_t, int> index;
  for (const trace::Process& p : trace.processes)
    if (auto tag = p.properties.get_int("run")) index.emplace(*tag, 0);
  int next = 0;
  for (auto& [tag, i] : index) i = next++;
  *runs = std::max(1, next);
  std::vector<int> out;
  for (const trace::Process& p : trace.processes) {
    auto tag = p.properties.get_int("run");
    out.push_back(tag ? index[*tag] : 0);
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool compared_level(const SpanRecord& s) {
  if (s.kind == static_cast<uint8_t>(SpanKind::kCounter) || s.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
      s.kind == static_cast<uint8_t>(SpanKind::kSample))
    return false;
  if (s.level == static_cast<uint8_t>(Level::kDevice)) return s.kind == static_cast<uint8_t>(SpanKind::kExecution);
  return s.level > static_cast<uint8_t>(Level::kApplication) && s.level < static_cast<uint8_t>(Level::kCpuSample);
}

std::string text_attr(const trace::Trace& trace, size_t i, std::string_view key) {
  auto a = trace.find_attr(i, key);
  return a ? trace.attr_value_string(*a) : std::string();
}

// Which key parts both traces carry: a trace from a reader that does not record shapes (or module
// paths) would otherwise match nothing of one that does.
struct KeyParts {
  bool shapes = true, module = true;
};

bool has_attr_key(const trace::Trace& trace, std::string_view key) {
  for (const AttrRecord& a : trace.attrs)
    if (trace.strings.get(a.key) == key) return true;
  return false;
}

Side collect(const trace::Trace& trace, uint8_t total_level, KeyParts parts) {
  Side side;
  const std::vector<int> run_of = run_of_process(trace, &side.runs);
  side.run_total_ns.assign(static_cast<size_t>(side.runs), 0.0);
  std::string key;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (!compared_level(s)) continue;
    const size_t run = static_cast<size_t>(run_of[s.process]);
    const double ns = static_cast<double>(std::max<int64_t>(0, s.duration_ns()));
    std::string shapes = parts.shapes ? text_attr(trace, i, attr_keys::kShapes) : std::string();
    std::string module = parts.module ? text_attr(trace, i, attr_keys::kModule) : std::string();
    key.assign(1, static_cast<char>(s.level));
    key.append(trace.name(s)).append(1, '\x1f').append(shapes).append(1, '\x1f').append(module);
    auto [it, fresh] = side.items.try_emplace(key);
    Samples& item = it->second;
    if (fresh) {
      item.level = s.level;
      item.name = std::string(trace.name(s));
      item.shapes = std::move(shapes);
      item.module = std::move(module);
      item.run_ns.assign(static_cast<size_t>(side.runs), 0.0);
      item.run_count = item.run_alloc = item.run_ns;
      item.run_instances.resize(static_cast<size_t>(side.runs));
    }
    item.run_instances[run].push_back(ns);
    item.run_count[run] += 1;
    if (auto alloc = trace.find_attr(i, memory_keys::kAllocBytes))
      item.run_alloc[run] += alloc->type == static_cast<uint8_t>(AttrType::kInt) ? static_cast<double>(alloc->value.i)
                                                                                   : alloc->value.d;
    item.instance_ns.push_back(ns);
  }
  // A run's time for an item: its count times its median instance. A sum would carry every
  // preemption of a loaded machine (a 4 ms scheduler tick landing in one 0.3 ms op makes that run's
  // sum 50% larger); the median instance does not, while a change to the op itself moves it.
  for (auto& [key_text, item] : side.items) {
    for (size_t run = 0; run < item.run_ns.size(); ++run) {
      item.run_ns[run] = item.run_count[run] * median(item.run_instances[run]);
      if (item.level == total_level) side.run_total_ns[run] += item.run_ns[run];
    }
  }
  return side;
}

// The level whose spans make the total: model when either trace has model spans, else the
// shallowest compared level present.
uint8_t pick_total_level(const trace::Trace& a, const trace::Trace& b) {
  uint8_t best = 0xFF;
  for (const trace::Trace* t : {&a, &b})
    for (const SpanRecord& s : t->spans)
      if (compared_level(s)) best = std::min(best, s.level);
  return best;
}

// How much slower (> 1) or faster everything in NEW ran: the median of the matched items' time
// ratios, weighted by their base time (so the few items a change touched do not move it), over the
// levels below the total. Two recordings of one configuration on a shared machine differ this way
// (other jobs, frequency): 20-40% between sessions was seen on this project's 2-core CI machine.
double common_factor(const std::vector<DiffItem>& items, uint8_t total_level) {
  std::vector<std::pair<double, double>> ratios;  // ratio, weight
  double weight_sum = 0;
  for (const DiffItem& i : items) {
    if (i.status != DiffStatus::kMatched || i.level == total_level || i.base_ns <= 0 || i.new_ns <= 0) continue;
    ratios.emplace_back(i.new_ns / i.base_ns, i.base_ns);
    weight_sum += i.base_ns;
  }
  if (ratios.empty()) return 1.0;
  std::sort(ratios.begin(), ratios.end());
  double seen = 0;
  for (const auto& [ratio, weight] : ratios) {
    seen += weight;
    if (seen >= weight_sum / 2) return ratio;
  }
  return ratios.back().first;
}

}  // namespace

DiffResult diff_traces(const trace::Trace& base, const trace::Trace& next, const DiffOptions& options) {
  DiffResult r;
  r.total_level = pick_total_level(base, next);
  KeyParts parts;
  for (auto [key, use] : {std::pair{attr_keys::kShapes, &parts.shapes}, std::pair{attr_keys::kModule, &parts.module}}) {
    const bool in_base = has_attr_key(base, key), in_new = has_attr_key(next, key);
    *use = in_base && in_new;
    if (in_base != in_new)
      r.notes.push_back("only " + std::string(in_base ? "BASE" : "NEW") + " records '" + std::string(key) +
                        "': items matched without it");
  }
  Side a = collect(base, r.total_level, parts), b = collect(next, r.total_level, parts);
  r.base_runs = a.runs;
  r.new_runs = b.runs;
  r.base_total_ns = median(a.run_total_ns);
  r.new_total_ns = median(b.run_total_ns);
  const bool run_test = a.runs >= kMinRunsForRunTest && b.runs >= kMinRunsForRunTest;
  if (!run_test)
    r.notes.push_back("fewer than " + std::to_string(kMinRunsForRunTest) +
                      " runs on a side: significance from per-instance durations (record both with --runs 5 "
                      "for a per-run test); items added or removed are not tested");
  std::map<std::string, std::pair<const Samples*, const Samples*>> keys;
  for (const auto& [k, sm] : a.items) keys[k].first = &sm;
  for (const auto& [k, sm] : b.items) keys[k].second = &sm;
  std::vector<std::pair<const Samples*, const Samples*>> sources;
  for (const auto& [k, pair] : keys) {
    const auto [sa, sb] = pair;
    const Samples& any = sa ? *sa : *sb;
    DiffItem item;
    item.level = any.level;
    item.name = any.name;
    item.shapes = any.shapes;
    item.module = any.module;
    item.status = sa && sb ? DiffStatus::kMatched : sa ? DiffStatus::kRemoved : DiffStatus::kAdded;
    item.base_ns = sa ? median(sa->run_ns) : 0;
    item.new_ns = sb ? median(sb->run_ns) : 0;
    item.base_count = sa ? median(sa->run_count) : 0;
    item.new_count = sb ? median(sb->run_count) : 0;
    item.base_alloc = sa ? median(sa->run_alloc) : 0;
    item.new_alloc = sb ? median(sb->run_alloc) : 0;
    r.items.push_back(std::move(item));
    sources.push_back(pair);
  }
  r.speed_factor = options.normalize ? common_factor(r.items, r.total_level) : 1.0;
  if (r.speed_factor != 1.0) {
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "everything in NEW ran %.1f%% %s (median change, by time): changes are judged beyond that "
                  "(--no-normalize: judge raw changes)",
                  std::fabs(r.speed_factor - 1) * 100, r.speed_factor > 1 ? "slower" : "faster");
    r.notes.push_back(buf);
  }
  const double c = r.speed_factor;
  std::vector<char> candidate(r.items.size(), 0);
  for (size_t n = 0; n < r.items.size(); ++n) {
    DiffItem& item = r.items[n];
    const auto [sa, sb] = sources[n];
    item.delta_ns = item.new_ns - item.base_ns;
    item.delta_pct = item.base_ns > 0 ? 100 * item.delta_ns / item.base_ns : 0;
    item.impact_pct = r.base_total_ns > 0 ? 100 * item.delta_ns / r.base_total_ns : 0;
    const double excess_ns = item.new_ns - c * item.base_ns;
    item.excess_ns = excess_ns;
    item.excess_pct = item.base_ns > 0 ? 100 * excess_ns / (c * item.base_ns) : 0;
    // Base samples scaled by the common factor: the test asks whether NEW differs beyond it.
    auto scaled = [c](std::vector<double> v) {
      for (double& x : v) x *= c;
      return v;
    };
    item.run_test = run_test;
    const std::vector<double> zeros_a(static_cast<size_t>(a.runs), 0.0), zeros_b(static_cast<size_t>(b.runs), 0.0);
    if (run_test) item.p_value = mann_whitney_u(scaled(sa ? sa->run_ns : zeros_a), sb ? sb->run_ns : zeros_b).p;
    else if (sa && sb) item.p_value = mann_whitney_u(scaled(sa->instance_ns), sb->instance_ns).p;
    item.significant = item.p_value < options.alpha;
    const bool slower_enough = item.status == DiffStatus::kAdded || item.excess_pct > options.threshold_pct;
    const double excess_impact = r.base_total_ns > 0 ? 100 * excess_ns / (c * r.base_total_ns) : 0;
    candidate[n] = item.significant && excess_ns > 0 && slower_enough && excess_impact >= options.min_impact_pct;
  }
  // Many items are tested at once: among the candidates (slower beyond the threshold and the
  // impact), Benjamini-Hochberg keeps the expected share of false regressions at alpha instead of
  // letting each of dozens of ops fail on its own 5% chance.
  std::vector<size_t> tested;
  std::vector<double> p_values;
  for (size_t n = 0; n < r.items.size(); ++n)
    if (candidate[n]) {
      tested.push_back(n);
      p_values.push_back(r.items[n].p_value);
    }
  const std::vector<bool> kept = benjamini_hochberg(p_values, options.alpha);
  for (size_t k = 0; k < tested.size(); ++k) {
    r.items[tested[k]].regression = kept[k];
    r.has_regression |= kept[k];
  }
  // Model-level items (the totals) first, then by their change beyond the speed factor (the raw
  // change without normalization); ties by name for a stable order.
  std::sort(r.items.begin(), r.items.end(), [&](const DiffItem& x, const DiffItem& y) {
    const bool tx = x.level == r.total_level, ty = y.level == r.total_level;
    if (tx != ty) return tx;
    if (std::fabs(x.excess_ns) != std::fabs(y.excess_ns)) return std::fabs(x.excess_ns) > std::fabs(y.excess_ns);
    return std::tie(x.level, x.name, x.shapes, x.module) < std::tie(y.level, y.name, y.shapes, y.module);
  });
  return r;
}

namespace {

const char* verdict(const DiffItem& item) {
  if (item.regression) return "REGRESSION";
  if (item.status == DiffStatus::kAdded) return "added";
  if (item.status == DiffStatus::kRemoved) return "removed";
  if (!item.significant) return "noise";
  return item.delta_ns > 0 ? "slower" : "faster";
}

}  // namespace

table::Table diff_table(const DiffResult& r, const DiffOptions& options, size_t top) {
  using table::Cell;
  table::Table t;
  t.name = "diff";
  t.title = "Changes from BASE to NEW, by impact on the total";
  t.columns = {"level", "name", "shapes", "module", "base_ms", "new_ms", "delta_ms", "delta_pct", "impact_pct", "excess_pct",
               "base_count", "new_count", "base_alloc_mb", "new_alloc_mb", "p_value", "verdict"};
  size_t shown = 0;
  for (const DiffItem& i : r.items) {
    if (i.level != r.total_level && shown++ >= top) continue;
    t.rows.push_back({Cell::text(level_name(i.level)), Cell::text(i.name), Cell::text(i.shapes), Cell::text(i.module),
                      Cell::real(i.base_ns / 1e6, 4), Cell::real(i.new_ns / 1e6, 4), Cell::real(i.delta_ns / 1e6, 4),
                      Cell::real(i.delta_pct, 2), Cell::real(i.impact_pct, 2), Cell::real(i.excess_pct, 2),
                      Cell::real(i.base_count, 1),
                      Cell::real(i.new_count, 1), Cell::real(i.base_alloc / 1e6, 3), Cell::real(i.new_alloc / 1e6, 3),
                      Cell::real(i.p_value, 4), Cell::text(verdict(i))});
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "total (%s spans, median per run): %.3f ms -> %.3f ms; runs: %d base, %d new",
                level_name(r.total_level).c_str(), r.base_total_ns / 1e6, r.new_total_ns / 1e6, r.base_runs, r.new_runs);
  t.notes.push_back(buf);
  std::snprintf(buf, sizeof(buf),
                "REGRESSION: p < %.2f (Mann-Whitney U), slower than BASE x speed factor by more than %.1f%% of its "
                "own time (excess_pct) and by at least %.1f%% of the total",
                options.alpha, options.threshold_pct, options.min_impact_pct);
  t.notes.push_back(buf);
  for (const auto& n : r.notes) t.notes.push_back(n);
  return t;
}

std::string diff_markdown(const DiffResult& r, const DiffOptions& options, size_t top) {
  const table::Table t = diff_table(r, options, top);
  size_t regressions = 0;
  for (const DiffItem& i : r.items) regressions += i.regression;
  std::string out = regressions ? "### :x: strata diff: " + std::to_string(regressions) + " significant regression(s)\n\n"
                                : std::string("### :white_check_mark: strata diff: no significant regression\n\n");
  auto escape = [](const std::string& s) {
    std::string e;
    for (char c : s) {
      if (c == '|') e += "\\|";
      else if (c == '\n' || c == '\r') e += ' ';
      else e += c;
    }
    return e;
  };
  for (const auto& note : t.notes) out += "- " + escape(note) + "\n";
  out += "\n|";
  for (const auto& c : t.columns) out += " " + c + " |";
  out += "\n|";
  for (size_t c = 0; c < t.columns.size(); ++c) out += "---|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& cell : row) {
      std::string text;
      if (auto* s = std::get_if<std::string>(&cell.value)) text = *s;
      else if (auto* d = std::get_if<double>(&cell.value)) {
        char b[64];
        std::snprintf(b, sizeof(b), "%.*f", cell.precision, *d);
        text = b;
      }
      out += " " + escape(text) + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace strata::analysis
