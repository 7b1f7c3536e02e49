#include "analysis/iterations/loop_structure.h"

#include <algorithm>
#include <cmath>

namespace strata::iterations::detail {
namespace {

constexpr double kShortlistShare = 0.3;  // of the best count * length
constexpr size_t kNodesByShare = 24;     // nodes read as cycles: the largest by share ...
constexpr size_t kNodesByCount = 24;     // ... and the most repeated (fine nested repeats)
constexpr size_t kMaxReadings = 16;
// Within this distance of MinerOptions::nested_rest_share a structural decision is ambiguous.
constexpr double kBorderlineBand = 0.1;

bool clean_at(const Subsequence& s, int64_t begin, int64_t length) {
  if (begin < 0 || begin + length > s.size()) return false;
  for (int64_t j = begin; j < begin + length; ++j)
    if (s.symbols[j] >= s.barrier) return false;
  return true;
}

bool is_rotation(std::span<const int32_t> a, std::span<const int32_t> b) {
  if (a.size() != b.size()) return false;
  std::vector<int32_t> twice(a.begin(), a.end());
  twice.insert(twice.end(), a.begin(), a.end());
  return std::search(twice.begin(), twice.end(), b.begin(), b.end()) != twice.end();
}

// The suffix-tree nodes worth reading as cycles: Criterion 3 with i = c, a fair share of the
// sequence, the longest per count; the largest by share and the most repeated.
std::vector<RepeatCandidate> shortlist(const SuffixIndex& index, int64_t n, int64_t min_repeats) {
  std::vector<RepeatCandidate> kept;
  size_t prune_at = 4096;
  double best = 0;
  auto prune = [&] {
    std::erase_if(kept, [&](const RepeatCandidate& c) { return c.share() < kShortlistShare * best; });
  };
  for_each_lcp_interval(index.lcp, [&](int32_t node_lcp, int32_t lb, int32_t rb, int32_t parent_lcp) {
    const int64_t count = rb - lb + 1;
    if (count < min_repeats) return;
    const int64_t length = std::min<int64_t>(node_lcp, (n + count - 1) / count - 1);
    if (length <= parent_lcp || length < 1) return;
    RepeatCandidate c{count, length, index.sa[lb], lb, rb, n};
    const double share = c.share();
    if (share < kShortlistShare * best) return;
    best = std::max(best, share);
    kept.push_back(c);
    if (kept.size() > prune_at) {
      prune();
      prune_at = std::max<size_t>(4096, 2 * kept.size());  // amortized: never prune on every push
    }
  });
  prune();
  std::sort(kept.begin(), kept.end(), [](const RepeatCandidate& a, const RepeatCandidate& b) {
    return a.count != b.count ? a.count > b.count : a.length > b.length;
  });
  kept.erase(std::unique(kept.begin(), kept.end(),
                         [](const RepeatCandidate& a, const RepeatCandidate& b) { return a.count == b.count; }),
             kept.end());
  std::vector<RepeatCandidate> out(kept.begin(), kept.begin() + std::min(kNodesByCount, kept.size()));
  std::stable_sort(kept.begin(), kept.end(),
                   [](const RepeatCandidate& a, const RepeatCandidate& b) { return a.share() > b.share(); });
  for (size_t k = 0; k < kept.size() && k < kNodesByShare; ++k)
    if (std::none_of(out.begin(), out.end(), [&](const RepeatCandidate& c) { return c.count == kept[k].count; }))
      out.push_back(kept[k]);
  // Finest first is not needed here; the share order makes the dedup below keep the best node of a cycle.
  std::stable_sort(out.begin(), out.end(),
                   [](const RepeatCandidate& a, const RepeatCandidate& b) { return a.share() > b.share(); });
  return out;
}

// The share of ops in the enclosing reading's iterations (its matches over `folded`) that are not
// the unit: ops outside the elements standing for the unit's runs, and noise those absorbed. Measured
// over all the enclosing iterations, not one: the unit's run lengths differ between them (noise
// breaks runs; an evaluation pass after every k-th step makes runs of k).
double rest_share(const Subsequence& folded, int32_t element, const Reading& enclosing,
                  std::span<const int64_t> gap_before_ns) {
  const auto outer = match_over(folded, enclosing.cycle(folded), std::max<int64_t>(1, enclosing.length / 2), gap_before_ns);
  int64_t total = 0;
  int64_t unit_ops = 0;
  for (const ApproximateMatch& m : outer) {
    total += folded.ops_in(m.first, m.last);
    for (int64_t j = m.first; j <= m.last; ++j)
      if (folded.symbols[j] == element) unit_ops += folded.clean_weight(j);
  }
  return total > 0 ? 1.0 - static_cast<double>(unit_ops) / static_cast<double>(total) : 1.0;
}

bool related(const Subsequence& s, const Reading& a, const Reading& b) {
  const auto ca = a.cycle(s);
  const auto cb = b.cycle(s);
  return cyclic_copies(ca, cb) >= 1 || cyclic_copies(cb, ca) >= 1 ||
         std::llabs(a.length - b.length) * 10 <= std::max(a.length, b.length);
}

void build_level(Level* level, int32_t alphabet, const MinerOptions& options, std::span<const int64_t> gaps,
                 const StepAnchors& anchors) {
  level->index = build_index(level->seq->symbols, alphabet);
  level->readings = find_readings(*level->seq, level->index, options, gaps, anchors);
}

}  // namespace

int64_t StepAnchors::runs_in(int64_t first, int64_t last) const {
  if (!present || first < 0 || last < first) return 0;
  auto anchor = [&](int64_t r) { return is_anchor[static_cast<size_t>(ops[r])] != 0; };
  int64_t runs = 0;
  for (int64_t r = first; r <= last; ++r)
    if (anchor(r) && (r == first || !anchor(r - 1))) ++runs;
  if (runs > 1 && anchor(first) && anchor(last)) --runs;  // one run across the cycle's ends
  return runs;
}

std::vector<Reading> find_readings(const Subsequence& s, const SuffixIndex& index, const MinerOptions& options,
                                   std::span<const int64_t> gap_before_ns, const StepAnchors& anchors) {
  const int64_t n = s.size();
  const int64_t min_repeats = std::max<int64_t>(2, options.min_repeats);
  const int64_t total_ops = std::max<int64_t>(1, s.ops_in(0, n - 1));
  std::vector<Reading> readings;
  for (const RepeatCandidate& node : shortlist(index, n, min_repeats)) {
    if (readings.size() >= kMaxReadings) break;
    const std::vector<int64_t> starts = nonoverlapping_starts(index, node);
    if (starts.size() < 2) continue;
    int64_t d = cycle_of(starts);
    int64_t begin = -1;
    for (size_t k = 0; k + 1 < starts.size() && begin < 0; ++k)
      if (starts[k + 1] - starts[k] == d && clean_at(s, starts[k], d)) begin = starts[k];
    if (begin < 0) continue;
    d = primitive_root(s.symbols.subspan(begin, d));
    // Rotate the cycle to where its run starts (the periodic stretch holding it, extended left): then
    // folding its runs takes whole copies, not a piece of the first copy and of the last.
    while (begin > 0 && s.symbols[begin - 1] < s.barrier && s.symbols[begin - 1] == s.symbols[begin - 1 + d])
      --begin;
    const auto cycle = s.symbols.subspan(begin, d);
    if (std::any_of(readings.begin(), readings.end(),
                    [&](const Reading& r) { return is_rotation(r.cycle(s), cycle); }))
      continue;
    Reading r;
    r.node = node;
    r.begin = begin;
    r.length = d;
    const auto matches = match_over(s, cycle, std::max<int64_t>(1, d / 2), gap_before_ns);
    r.iterations = static_cast<int64_t>(matches.size());
    r.explained = static_cast<double>(ops_matched(s, cycle, matches)) / static_cast<double>(total_ops);
    r.cycle_ops = s.ops_in(begin, begin + d - 1);
    r.anchors = anchors.runs_in(s.at(begin), s.at_last(begin + d - 1));
    readings.push_back(r);
  }
  double best = 0;
  for (const Reading& r : readings) best = std::max(best, r.explained);
  std::erase_if(readings, [&](const Reading& r) {
    return r.iterations < min_repeats || r.explained < options.count_preference * best;
  });
  std::sort(readings.begin(), readings.end(), [](const Reading& a, const Reading& b) {
    return a.length != b.length ? a.length < b.length : a.explained > b.explained;
  });
  return readings;
}

void fold_runs(const Subsequence& in, std::span<const int32_t> unit, int32_t element,
               std::span<const int64_t> gap_before_ns, Subsequence* out, std::vector<int32_t>* copies) {
  const int64_t n = in.size();
  out->storage.clear();
  out->to_seq.clear();
  out->to_last.clear();
  out->noise.clear();
  out->storage.reserve(static_cast<size_t>(n));
  out->to_seq.reserve(static_cast<size_t>(n));
  out->to_last.reserve(static_cast<size_t>(n));
  out->noise.reserve(static_cast<size_t>(n));
  if (copies != nullptr) copies->clear();
  // Copies of the unit as Algorithm 1 finds them (an inserted op does not break a run), chained into
  // runs where one copy ends right before the next starts.
  const auto matches =
      unit.empty() ? std::vector<ApproximateMatch>{}
                   : match_over(in, unit, std::max<int64_t>(1, static_cast<int64_t>(unit.size()) / 2), gap_before_ns);
  size_t k = 0;
  for (int64_t j = 0; j < n;) {
    if (k < matches.size() && matches[k].first == j) {
      int64_t last = matches[k].last;
      int64_t matched = ops_matched(in, unit, {matches[k]});
      int32_t c = 1;
      for (++k; k < matches.size() && matches[k].first == last + 1; ++k, ++c) {
        last = matches[k].last;
        matched += ops_matched(in, unit, {matches[k]});
      }
      out->storage.push_back(element);
      out->to_seq.push_back(static_cast<int32_t>(in.at(j)));
      out->to_last.push_back(static_cast<int32_t>(in.at_last(last)));
      out->noise.push_back(static_cast<int32_t>(in.ops_in(j, last) - matched));
      if (copies != nullptr) copies->push_back(c);
      j = last + 1;
      continue;
    }
    out->storage.push_back(in.symbols[j]);
    out->to_seq.push_back(static_cast<int32_t>(in.at(j)));
    out->to_last.push_back(in.symbols[j] >= in.barrier ? -1 : static_cast<int32_t>(in.at_last(j)));
    out->noise.push_back(in.noise.empty() ? 0 : in.noise[j]);
    if (copies != nullptr) copies->push_back(0);
    ++j;
  }
  out->symbols = out->storage;
  out->barrier = in.barrier;
  out->alphabet = std::max(in.alphabet, element + 1);
}

bool choose_structure(const Subsequence& s, int32_t op_alphabet, const MinerOptions& options,
                      std::span<const int64_t> gap_before_ns, const StepAnchors& anchors, StructureChoice* out) {
  *out = StructureChoice{};
  out->levels.emplace_back();
  out->levels.back().seq = &s;
  build_level(&out->levels.back(), s.alphabet, options, gap_before_ns, anchors);
  if (out->levels.back().readings.empty()) return false;
  const double threshold = options.nested_rest_share;
  for (int l = 0;; ++l) {
    Level& level = out->levels[static_cast<size_t>(l)];
    const Reading unit = level.readings.front();
    out->chosen = unit;
    // The step anchors decide when the sequence has them: a cycle holding the optimizer step is the
    // training step; one without is nested inside it.
    if (anchors.present && unit.anchors >= 1) {
      out->by_anchor = unit.anchors == 1;
      break;
    }
    if (l + 1 >= kMaxFoldLevels) break;
    const int32_t element = op_alphabet + l;
    Level next;
    next.owned = std::make_unique<Subsequence>();
    fold_runs(*level.seq, unit.cycle(*level.seq), element, gap_before_ns, next.owned.get());
    next.seq = next.owned.get();
    if (next.seq->size() >= level.seq->size() || next.seq->size() < 2) break;
    build_level(&next, next.seq->alphabet, options, gap_before_ns, anchors);
    // The enclosing reading: the one of the folded sequence that holds the folded runs, explaining most.
    const Reading* enclosing = nullptr;
    for (const Reading& r : next.readings) {
      const auto c = r.cycle(*next.seq);
      if (std::find(c.begin(), c.end(), element) == c.end()) continue;
      if (enclosing == nullptr || r.explained > enclosing->explained) enclosing = &r;
    }
    if (enclosing == nullptr) break;  // nothing encloses it: the loop is a run of this cycle
    const double rest = rest_share(*next.seq, element, *enclosing, gap_before_ns);
    // A unit that occurs once per enclosing iteration (about as many iterations) is a piece of it:
    // the enclosing cycle is the same loop with the ops the piece left out.
    const bool piece = enclosing->iterations * 10 >= unit.iterations * 9;
    const bool nested = anchors.present ? unit.anchors == 0 : piece || rest >= threshold - 1e-9;
    out->rest = rest;
    if (!anchors.present && !piece && std::fabs(rest - threshold) < kBorderlineBand) {
      // Ambiguous: the other side of the decision is the alternative reading.
      out->borderline = true;
      out->alternative = nested ? Alternative{unit.cycle_ops, unit.iterations, unit.explained}
                                : Alternative{enclosing->cycle_ops, enclosing->iterations, enclosing->explained};
    }
    if (!nested) break;
    out->units.emplace_back(unit.cycle(*level.seq).begin(), unit.cycle(*level.seq).end());
    out->levels.push_back(std::move(next));
  }
  // Otherwise the alternative is an eligible reading at the chosen level that is neither part of the
  // chosen cycle nor made of it: a different loop explaining about as much.
  const Level& chosen_level = out->levels.back();
  if (!out->borderline) {
    for (const Reading& r : chosen_level.readings) {
      if (r.begin == out->chosen.begin && r.length == out->chosen.length) continue;
      if (related(*chosen_level.seq, r, out->chosen)) continue;
      if (!out->alternative || r.explained > out->alternative->explained)
        out->alternative = Alternative{r.cycle_ops, r.iterations, r.explained};
    }
  }
  return true;
}

std::vector<NestedRepeat> nested_repeats(std::span<const int32_t> cycle_ops) {
  std::vector<NestedRepeat> out;
  struct Run {
    int64_t offset, period, copies;
  };
  auto runs_in = [](std::span<const int32_t> c, int64_t min_cover) {
    const int64_t n = static_cast<int64_t>(c.size());
    // Periods up to n / 2, bounded so that the scan stays near 2e7 comparisons on huge iterations.
    int64_t max_period = n / 2;
    if (n > 0) max_period = std::min<int64_t>(max_period, std::max<int64_t>(64, 20'000'000 / n));
    std::vector<Run> runs;
    for (int64_t p = 1; p <= max_period; ++p) {
      int64_t k = 0;
      while (k + p < n) {
        if (c[k] != c[k + p]) {
          ++k;
          continue;
        }
        int64_t e = k;
        while (e + p < n && c[e] == c[e + p]) ++e;
        const int64_t len = e - k;  // positions k..e-1 equal their successor one period on
        const int64_t copies = (len + p) / p;
        if (copies >= 2 && copies * p >= min_cover && primitive_root(c.subspan(k, p)) == p)
          runs.push_back({k, p, copies});
        k = e + 1;
      }
    }
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
      return a.copies * a.period != b.copies * b.period ? a.copies * a.period > b.copies * b.period
                                                        : a.period < b.period;
    });
    std::vector<Run> chosen;
    for (const Run& r : runs) {
      if (chosen.size() >= 8) break;
      const bool overlaps = std::any_of(chosen.begin(), chosen.end(), [&](const Run& q) {
        return r.offset < q.offset + q.copies * q.period && q.offset < r.offset + r.copies * r.period;
      });
      if (!overlaps) chosen.push_back(r);
    }
    std::sort(chosen.begin(), chosen.end(), [](const Run& a, const Run& b) { return a.offset < b.offset; });
    return chosen;
  };
  for (const Run& r : runs_in(cycle_ops, 4)) {
    NestedRepeat nr;
    nr.offset = r.offset;
    nr.unit_ops = r.period;
    nr.copies = nr.copies_min = nr.copies_max = r.copies;
    nr.unit.assign(cycle_ops.begin() + r.offset, cycle_ops.begin() + r.offset + r.period);
    out.push_back(nr);
    if (r.period < 8) continue;
    for (const Run& inner : runs_in(cycle_ops.subspan(r.offset, r.period), 4)) {
      NestedRepeat in;
      in.offset = r.offset + inner.offset;
      in.unit_ops = inner.period;
      in.copies = in.copies_min = in.copies_max = inner.copies;
      in.depth = 1;
      in.unit.assign(cycle_ops.begin() + in.offset, cycle_ops.begin() + in.offset + inner.period);
      out.push_back(in);
    }
  }
  return out;
}

}  // namespace strata::iterations::detail
