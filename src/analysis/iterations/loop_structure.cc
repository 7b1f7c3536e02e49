#include "analysis/iterations/loop_structure.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace strata::analysis::iterations::detail {
namespace {

constexpr double kShortlistShare = 0.3;  // of the best count * length
constexpr size_t kNodesByShare = 24;     // nodes read as cycles: the largest by share ...
constexpr size_t kNodesByCount = 24;     // ... and the most repeated (fine nested repeats)
constexpr size_t kMaxReadings = 24;
// Within this distance of MinerOptions::nested_rest_share a structural decision is ambiguous.
constexpr double kBorderlineBand = 0.1;

// Extra ops allowed per iteration when measuring what a reading explains: half its cycle as in the
// final matching, but at most 64. An attempt at a wrong start scans up to that many ops before it
// fails, and readings are measured over the whole level (24 of them, at every level); an iteration
// holding more (a long evaluation pass) counts as unexplained here, not in the final matching.
int64_t evaluation_k0(int64_t cycle_ops) { return std::clamp<int64_t>(cycle_ops / 2, 1, 64); }

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
// sequence, the longest per count; the largest by share and the most repeated. Shares are of ops, not
// elements: on a folded level one element can stand for hundreds of ops (a run of micro-batches)
// while a set-up's repeated op is one op per element.
std::vector<RepeatCandidate> shortlist(const Subsequence& s, const SuffixIndex& index, int64_t min_repeats) {
  const int64_t n = s.size();
  std::vector<int64_t> ops_before;  // prefix sums of the elements' ops, on folded levels
  if (s.folded()) {
    ops_before.assign(static_cast<size_t>(n) + 1, 0);
    for (int64_t j = 0; j < n; ++j) ops_before[j + 1] = ops_before[j] + s.weight(j);
  }
  const double total = s.folded() ? static_cast<double>(std::max<int64_t>(1, ops_before[n])) : 0;
  auto share_of = [&](const RepeatCandidate& c) {
    if (!s.folded()) return c.share();
    return static_cast<double>(c.count) *
           static_cast<double>(ops_before[c.position + c.length] - ops_before[c.position]) / total;
  };
  std::vector<RepeatCandidate> kept;
  size_t prune_at = 4096;
  double best = 0;
  auto prune = [&] {
    std::erase_if(kept, [&](const RepeatCandidate& c) { return share_of(c) < kShortlistShare * best; });
  };
  for_each_lcp_interval(index.lcp, [&](int32_t node_lcp, int32_t lb, int32_t rb, int32_t parent_lcp) {
    const int64_t count = rb - lb + 1;
    if (count < min_repeats) return;
    const int64_t length = std::min<int64_t>(node_lcp, (n + count - 1) / count - 1);
    if (length <= parent_lcp || length < 1) return;
    RepeatCandidate c{count, length, index.sa[lb], lb, rb, n};
    const double share = share_of(c);
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
  kept.erase(
      std::unique(kept.begin(), kept.end(),
                  [](const RepeatCandidate& a, const RepeatCandidate& b) { return a.count == b.count; }),
      kept.end());
  // Every scale of repetition gets a say: the node with the largest share in each band of counts
  // (a factor of 1.25 wide: an RNN's time steps, the steps, "k steps and an eval" each have their own
  // band), then the largest by share and the most repeated. Multiples of one cycle and fragments of
  // it fill the top by share, and would crowd out the other scales.
  std::vector<RepeatCandidate> bands;
  for (const RepeatCandidate& c : kept) {  // most repeated first
    const int band = static_cast<int>(std::log(static_cast<double>(c.count)) / std::log(1.25));
    if (!bands.empty() &&
        static_cast<int>(std::log(static_cast<double>(bands.back().count)) / std::log(1.25)) == band) {
      if (share_of(c) > share_of(bands.back())) bands.back() = c;
    } else {
      bands.push_back(c);
    }
  }
  std::stable_sort(bands.begin(), bands.end(), [&](const RepeatCandidate& a, const RepeatCandidate& b) {
    return share_of(a) > share_of(b);
  });
  std::vector<RepeatCandidate> out;
  auto add = [&](const RepeatCandidate& c) {
    if (std::none_of(out.begin(), out.end(), [&](const RepeatCandidate& o) { return o.count == c.count; }))
      out.push_back(c);
  };
  for (const RepeatCandidate& c : bands) add(c);
  for (size_t k = 0; k < kept.size() && k < kNodesByCount; ++k) add(kept[k]);
  std::stable_sort(kept.begin(), kept.end(), [&](const RepeatCandidate& a, const RepeatCandidate& b) {
    return share_of(a) > share_of(b);
  });
  for (size_t k = 0; k < kept.size() && k < kNodesByShare; ++k) add(kept[k]);
  return out;
}

// The share of ops in the enclosing reading's iterations (its matches over `folded`) that are not
// the unit: ops outside the elements standing for the unit's runs, and noise those absorbed. Measured
// over all the enclosing iterations, not one: the unit's run lengths differ between them (noise
// breaks runs; an evaluation pass after every k-th step makes runs of k).
double rest_share(const Subsequence& folded, int32_t element, const Reading& enclosing,
                  std::span<const int64_t> gap_before_ns) {
  const auto outer =
      match_over(folded, enclosing.cycle(folded), evaluation_k0(enclosing.cycle_ops), gap_before_ns, false);
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

// Algorithm 1's copies of a unit to fold (one extra op each), none taking a step mark in.
std::vector<ApproximateMatch> unit_copies(const Subsequence& in, std::span<const int32_t> unit,
                                          std::span<const int64_t> gaps, const StepAnchors* anchors) {
  if (unit.empty()) return {};
  // (A one-op unit takes exact copies only.)
  auto matches = match_over(in, unit, unit.size() >= 2 ? 1 : 0, gaps);
  if (anchors != nullptr && anchors->present)
    std::erase_if(matches, [&](const ApproximateMatch& m) {
      return anchors->runs_in(in.at(m.first), in.at_last(m.last)) > 0;
    });
  return matches;
}

// The cycle rotated to where its runs start, so that folding takes whole copies and never a copy
// holding the block that separates two runs (the ops around an RNN's time steps, an evaluation pass
// between steps: inside a copy they would make it unmatchable). Candidates: the offsets of the cycle
// where stretches repeating with its period (two copies or more) mostly start or end, and where the
// idle gap before an op is largest; the one whose copies (Algorithm 1, one extra op each) cover
// most ops wins.
std::vector<int32_t> rotate_to_runs(const Subsequence& s, std::span<const int32_t> cycle,
                                    std::span<const int64_t> gaps, const StepAnchors& anchors) {
  const int64_t n = s.size();
  const int64_t d = static_cast<int64_t>(cycle.size());
  if (d < 2) return {cycle.begin(), cycle.end()};
  // Offsets in the cycle: a stretch starting at i holds the cycle rotated by the offset at which
  // s[i, i + d) occurs in the cycle read twice (runs are separated by blocks of other ops, so the
  // offset is read from the content, not from the distance to some occurrence).
  std::vector<int32_t> twice(cycle.begin(), cycle.end());
  twice.insert(twice.end(), cycle.begin(), cycle.end());
  auto offset_of = [&](int64_t i) {
    const auto it = std::search(twice.begin(), twice.end(), s.symbols.begin() + i, s.symbols.begin() + i + d);
    return it == twice.end() ? int64_t{-1} : static_cast<int64_t>(it - twice.begin());
  };
  std::unordered_map<int64_t, int64_t> starts, ends;
  std::vector<double> gap_score(static_cast<size_t>(d), 0.0);
  int64_t i = 0;
  while (i + d < n) {
    if (s.symbols[i] != s.symbols[i + d] || s.symbols[i] >= s.barrier) {
      ++i;
      continue;
    }
    int64_t e = i;
    while (e + d < n && s.symbols[e] == s.symbols[e + d] && s.symbols[e] < s.barrier) ++e;
    const int64_t o = e - i >= d ? offset_of(i) : -1;
    if (o >= 0) {  // copies from i to e + d
      ++starts[o];
      ++ends[(o + (e - i)) % d];
      if (!gaps.empty())
        for (int64_t q = i; q < e + d; ++q)
          gap_score[static_cast<size_t>((o + (q - i)) % d)] += static_cast<double>(gap_in(s, gaps, q));
    }
    i = e + 1;
  }
  std::vector<int64_t> offsets = {0};
  auto top = [&](const std::unordered_map<int64_t, int64_t>& counts) {
    std::vector<std::pair<int64_t, int64_t>> v(counts.begin(), counts.end());
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    for (size_t k = 0; k < v.size() && k < 3; ++k) offsets.push_back(v[k].first);
  };
  top(starts);
  top(ends);
  if (!gaps.empty()) {
    std::vector<int64_t> by_gap(static_cast<size_t>(d));
    for (int64_t o = 0; o < d; ++o) by_gap[static_cast<size_t>(o)] = o;
    std::partial_sort(by_gap.begin(), by_gap.begin() + std::min<int64_t>(2, d), by_gap.end(),
                      [&](int64_t x, int64_t y) {
                        return gap_score[x] > gap_score[y] || (gap_score[x] == gap_score[y] && x < y);
                      });
    offsets.insert(offsets.end(), by_gap.begin(), by_gap.begin() + std::min<int64_t>(2, d));
  }
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  std::vector<int32_t> best(cycle.begin(), cycle.end());
  int64_t best_ops = -1;
  for (int64_t o : offsets) {
    std::vector<int32_t> rotated(cycle.begin() + o, cycle.end());
    rotated.insert(rotated.end(), cycle.begin(), cycle.begin() + o);
    const int64_t covered = ops_matched(s, rotated, unit_copies(s, rotated, gaps, &anchors));
    if (covered > best_ops) {
      best_ops = covered;
      best = std::move(rotated);
    }
  }
  return best;
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

std::vector<Reading> find_readings(const Subsequence& s, const SuffixIndex& index,
                                   const MinerOptions& options, std::span<const int64_t> gap_before_ns,
                                   const StepAnchors& anchors) {
  const int64_t n = s.size();
  const int64_t min_repeats = std::max<int64_t>(2, options.min_repeats);
  const int64_t total_ops = std::max<int64_t>(1, s.ops_in(0, n - 1));
  std::vector<Reading> readings;
  for (const RepeatCandidate& node : shortlist(s, index, min_repeats)) {
    if (readings.size() >= kMaxReadings) break;
    const std::vector<int64_t> starts = nonoverlapping_starts(index, node);
    if (starts.size() < 2) continue;
    int64_t d = cycle_of(starts);
    int64_t begin = -1;
    for (size_t k = 0; k + 1 < starts.size() && begin < 0; ++k)
      if (starts[k + 1] - starts[k] == d && clean_at(s, starts[k], d)) begin = starts[k];
    if (begin < 0) continue;
    d = primitive_root(s.symbols.subspan(begin, d));
    const auto cycle = s.symbols.subspan(begin, d);
    if (std::any_of(readings.begin(), readings.end(),
                    [&](const Reading& r) { return is_rotation(r.cycle(s), cycle); }))
      continue;
    Reading r;
    r.node = node;
    r.begin = begin;
    r.length = d;
    const auto matches =
        match_over(s, cycle, evaluation_k0(s.ops_in(begin, begin + d - 1)), gap_before_ns, false);
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
               std::span<const int64_t> gap_before_ns, Subsequence* out, std::vector<int32_t>* copies,
               const StepAnchors* anchors) {
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
  // Copies of the unit as Algorithm 1 finds them with at most one extra element each (an op inserted
  // into a copy does not break its run), chained into runs where one copy ends right before the next
  // starts. More extras per copy would let a run reach across the ops between two runs (an optimizer
  // step between two steps' micro-batches) and swallow the enclosing structure.
  const auto matches = unit_copies(in, unit, gap_before_ns, anchors);
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
  out->fold_from = std::min(in.fold_from, element);
  out->alphabet = std::max(in.alphabet, element + 1);
}

namespace {

// Folding `unit` at `level`, and what encloses its runs one level up.
struct FoldAttempt {
  std::vector<int32_t> unit;  // the unit as folded (rotated to where its runs start)
  Level next;
  const Reading* enclosing = nullptr;  // a reading of next
  double rest = 1;
  bool piece = false;    // the unit occurs about once per enclosing iteration
  bool varying = false;  // the unit's runs differ in length
};

bool try_fold(const Level& level, std::span<const int32_t> unit, int64_t unit_iterations, int32_t element,
              const MinerOptions& options, std::span<const int64_t> gaps, const StepAnchors& anchors,
              FoldAttempt* out) {
  out->next.owned = std::make_unique<Subsequence>();
  std::vector<int32_t> copies;
  out->unit = rotate_to_runs(*level.seq, unit, gaps, anchors);
  fold_runs(*level.seq, out->unit, element, gaps, out->next.owned.get(), &copies, &anchors);
  // Run lengths that vary: no count (of two copies or more) holds 80% of the runs. An inserted op
  // that joins or splits a run changes a few counts; a nested loop whose count varies, many.
  std::unordered_map<int32_t, int64_t> runs_by_count;
  int64_t runs = 0;
  for (int32_t c : copies)
    if (c >= 2) ++runs_by_count[c], ++runs;
  int64_t most = 0;
  for (const auto& [c, k] : runs_by_count) most = std::max(most, k);
  out->varying = runs >= 3 && most * 5 < runs * 4;
  out->next.seq = out->next.owned.get();
  if (out->next.seq->size() >= level.seq->size() || out->next.seq->size() < 2) return false;
  build_level(&out->next, out->next.seq->alphabet, options, gaps, anchors);
  // The enclosing reading: the one of the folded sequence that holds the folded runs, explaining most.
  for (const Reading& r : out->next.readings) {
    const auto c = r.cycle(*out->next.seq);
    if (std::find(c.begin(), c.end(), element) == c.end()) continue;
    if (out->enclosing == nullptr || r.explained > out->enclosing->explained) out->enclosing = &r;
  }
  if (out->enclosing == nullptr) return false;  // nothing encloses it: the loop is a run of this cycle
  out->rest = rest_share(*out->next.seq, element, *out->enclosing, gaps);
  out->piece = out->enclosing->iterations * 10 >= unit_iterations * 9;
  return true;
}

// A repetition inside the cycle of the reading that explains most at `level` (a tandem run of >= 2
// copies of a unit of >= 3 ops, covering >= a tenth of it), when none of the
// eligible readings is it, and its runs vary in length (try_fold tells): an RNN's time steps whose count
// varies from step to step, so that the steps themselves repeat only approximately and the time step alone
// explains too little to be eligible. Its unit, rotated to the run's start; empty if none.
std::vector<int32_t> tandem_unit(const Level& level) {
  const Reading* best = nullptr;
  for (const Reading& r : level.readings)
    if (best == nullptr || r.explained > best->explained) best = &r;
  if (best == nullptr) return {};
  const auto cycle = best->cycle(*level.seq);
  const int64_t d = static_cast<int64_t>(cycle.size());
  // Inside the cycle, not across its ends: a run across them could hold the end of one iteration and
  // the start of the next.
  const std::vector<int32_t> c(cycle.begin(), cycle.end());
  // The innermost such run: the shortest unit (two consecutive iterations with the same count make a
  // run too, of a whole iteration).
  int64_t best_cover = (d + 9) / 10 - 1;
  std::vector<int32_t> unit;
  const int64_t max_period =
      std::min<int64_t>(d / 2, std::max<int64_t>(64, 20'000'000 / std::max<int64_t>(1, d)));
  for (int64_t p = 3; p <= max_period && unit.empty(); ++p) {
    for (int64_t k = 0; k < d;) {
      int64_t e = k;
      while (e + p < d && c[e] == c[e + p]) ++e;
      const int64_t copies = (e - k + p) / p;
      if (e > k && copies >= 2 && copies * p > best_cover &&
          primitive_root(std::span<const int32_t>(c).subspan(k, p)) == p) {
        best_cover = copies * p;
        unit.assign(c.begin() + k, c.begin() + k + p);
      }
      k = e + 1;
    }
  }
  return unit;
}

}  // namespace

bool choose_structure(const Subsequence& s, int32_t op_alphabet, const MinerOptions& options,
                      std::span<const int64_t> gap_before_ns, const StepAnchors& anchors,
                      StructureChoice* out) {
  *out = StructureChoice{};
  out->levels.emplace_back();
  out->levels.back().seq = &s;
  build_level(&out->levels.back(), s.alphabet, options, gap_before_ns, anchors);
  if (out->levels.back().readings.empty()) return false;
  const double threshold = options.nested_rest_share;
  auto commit = [&](FoldAttempt* attempt) {
    out->units.push_back(attempt->unit);
    out->levels.push_back(std::move(attempt->next));
  };
  for (int l = 0; l + 1 < kMaxFoldLevels; ++l) {
    const Level& level = out->levels[static_cast<size_t>(l)];
    const Reading& unit = level.readings.front();
    const int32_t element = op_alphabet + l;
    // A repetition of varying count inside the best reading: folded first, when it is nested.
    const std::vector<int32_t> inner = tandem_unit(level);
    if (!inner.empty() && static_cast<int64_t>(inner.size()) < unit.length) {
      bool marked = false;
      for (int32_t x : inner)
        marked |= anchors.present && x < op_alphabet && anchors.is_anchor[static_cast<size_t>(x)] != 0;
      FoldAttempt attempt;
      if (!marked && try_fold(level, inner, 0, element, options, gap_before_ns, anchors, &attempt) &&
          attempt.varying && (anchors.present || attempt.rest >= threshold - 1e-9)) {
        commit(&attempt);
        continue;
      }
    }
    bool walked_up = false;
    for (const Reading& candidate : level.readings) {
      out->chosen = candidate;
      // The step anchors decide when the sequence has them: a cycle holding the optimizer step is the
      // training step; one without is nested inside it.
      if (anchors.present && candidate.anchors >= 1) {
        out->by_anchor = candidate.anchors == 1;
        break;
      }
      // A cycle with about as many iterations as a longer reading explaining as much is a piece of
      // that reading's cycle (the same loop, some of its ops left out), not structure inside it.
      if (std::any_of(level.readings.begin(), level.readings.end(), [&](const Reading& r) {
            return r.length > candidate.length && r.iterations * 10 >= candidate.iterations * 9 &&
                   r.explained >= candidate.explained;
          }))
        continue;
      FoldAttempt attempt;
      if (!try_fold(level, candidate.cycle(*level.seq), candidate.iterations, element, options, gap_before_ns,
                    anchors, &attempt))
        break;  // nothing encloses it: the loop is a run of this cycle
      const double rest = attempt.rest;
      const Reading& enclosing = *attempt.enclosing;
      // The same once folded: the enclosing cycle has about as many iterations.
      if (attempt.piece) continue;
      const bool nested = anchors.present || rest >= threshold - 1e-9;
      out->rest = rest;
      if (!anchors.present && std::fabs(rest - threshold) < kBorderlineBand) {
        // Ambiguous: the other side of the decision is the alternative reading.
        out->borderline = true;
        out->alternative = nested
                               ? Alternative{candidate.cycle_ops, candidate.iterations, candidate.explained}
                               : Alternative{enclosing.cycle_ops, enclosing.iterations, enclosing.explained};
      }
      if (!nested) break;
      commit(&attempt);
      out->chosen = out->levels.back().readings.front();
      walked_up = true;
      break;
    }
    if (!walked_up) break;
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
        // Two copies of a one- or two-op unit ("x x", "x y x y") are too common in op streams to
        // call structure; longer units, or three copies and more, are.
        if (copies >= 2 && copies * p >= min_cover && (copies >= 3 || p >= 3) &&
            primitive_root(c.subspan(k, p)) == p)
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
  }
  return out;
}

std::vector<NestedRepeat> nested_structure(std::span<const int32_t> template_ops,
                                           const std::vector<FoldedUnit>& folded, int32_t op_alphabet) {
  std::vector<NestedRepeat> out;
  Subsequence level0;
  level0.symbols = template_ops;
  level0.alphabet = op_alphabet;
  std::unique_ptr<Subsequence> folded_level;
  const Subsequence* cur = &level0;
  const int depth_of_last = static_cast<int>(folded.size()) - 1;
  for (size_t l = 0; l < folded.size(); ++l) {
    auto next = std::make_unique<Subsequence>();
    std::vector<int32_t> copies;
    fold_runs(*cur, folded[l].unit, op_alphabet + static_cast<int32_t>(l), {}, next.get(), &copies);
    for (int64_t j = 0; j < next->size(); ++j) {
      if (copies[static_cast<size_t>(j)] <= 0) continue;
      NestedRepeat r;
      r.offset = next->at(j);
      r.unit_ops = static_cast<int64_t>(folded[l].ops.size());
      r.copies = copies[static_cast<size_t>(j)];
      r.copies_min = std::min(r.copies, folded[l].copies_min);
      r.copies_max = std::max(r.copies, folded[l].copies_max);
      r.depth = depth_of_last - static_cast<int>(l);
      r.folded = true;
      r.unit = folded[l].ops;
      out.push_back(std::move(r));
    }
    folded_level = std::move(next);
    cur = folded_level.get();
  }
  // Inside one copy of each folded unit, once (at its first run): the repetition it holds with a
  // fixed count (an RNN's time steps inside a gradient-accumulation micro-batch of fixed length).
  const size_t folded_runs = out.size();
  for (size_t l = 0; l < folded.size(); ++l) {
    const auto first_run = std::find_if(out.begin(), out.begin() + static_cast<int64_t>(folded_runs),
                                        [&](const NestedRepeat& r) { return r.unit == folded[l].ops; });
    if (first_run == out.begin() + static_cast<int64_t>(folded_runs)) continue;
    const int64_t at = first_run->offset;
    const int depth = first_run->depth + 1;
    for (NestedRepeat& r : nested_repeats(folded[l].ops)) {
      if (std::any_of(out.begin(), out.end(),
                      [&](const NestedRepeat& q) { return q.folded && q.unit == r.unit; }))
        continue;  // a folded unit of its own, listed with its runs
      r.offset += at;
      r.depth = depth;
      out.push_back(std::move(r));
    }
  }
  // Tandem repeats the miner did not fold (a fixed count it did not need to walk past), outside the
  // folded runs.
  const size_t folded_entries = out.size();
  for (NestedRepeat& r : nested_repeats(template_ops)) {
    const int64_t end = r.offset + r.copies * r.unit_ops;
    const bool overlaps = std::any_of(
        out.begin(), out.begin() + static_cast<int64_t>(folded_entries),
        [&](const NestedRepeat& f) { return r.offset < f.offset + f.copies * f.unit_ops && f.offset < end; });
    if (!overlaps) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const NestedRepeat& a, const NestedRepeat& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.depth < b.depth;
  });
  return out;
}

}  // namespace strata::analysis::iterations::detail
