#include "import/nsys_nvtx_levels.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

namespace strata::import {

bool is_step_range_name(std::string_view name) {
  std::string n(name);
  for (char& c : n)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  auto trailing = [](char c) {
    return (c >= '0' && c <= '9') || c == '#' || c == ' ' || c == '_' || c == '-' || c == ':' || c == '.' ||
           c == '=';
  };
  while (!n.empty() && trailing(n.back())) n.pop_back();
  static constexpr std::string_view kSteps[] = {
      "profilerstep",    "step",      "train_step",   "training_step",  "eval_step", "val_step",
      "validation_step", "test_step", "predict_step", "inference_step", "iteration", "iter",
      "train_iteration", "batch"};
  return std::find(std::begin(kSteps), std::end(kSteps), n) != std::end(kSteps);
}

std::vector<bool> nvtx_model_level(std::span<const NvtxRange> ranges) {
  std::vector<bool> model(ranges.size(), false);
  // Usable ranges by thread, then start, then longer first, then input order.
  std::vector<size_t> order;
  for (size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].start && ranges[i].end && *ranges[i].end >= *ranges[i].start) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const NvtxRange &x = ranges[a], &y = ranges[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (*x.start != *y.start) return *x.start < *y.start;
    if (*x.end != *y.end) return *x.end > *y.end;
    return a < b;
  });
  std::vector<int64_t> parent(ranges.size(), -1);
  size_t begin = 0;
  while (begin < order.size()) {
    size_t end = begin;
    while (end < order.size() && ranges[order[end]].thread == ranges[order[begin]].thread) ++end;
    // One thread: parents through a stack of the open (enclosing) ranges.
    std::vector<size_t> open;
    size_t roots = 0;
    int64_t root = -1;
    bool any_model = false;
    for (size_t k = begin; k < end; ++k) {
      const size_t i = order[k];
      while (!open.empty() && *ranges[open.back()].end < *ranges[i].end) open.pop_back();
      if (open.empty()) {
        ++roots;
        root = static_cast<int64_t>(i);
      } else {
        parent[i] = static_cast<int64_t>(open.back());
      }
      open.push_back(i);
      if (is_step_range_name(ranges[i].name)) {
        any_model = true;
        for (int64_t p = static_cast<int64_t>(i); p >= 0 && !model[static_cast<size_t>(p)];
             p = parent[static_cast<size_t>(p)])
          model[static_cast<size_t>(p)] = true;
      }
    }
    if (!any_model && roots == 1 && end - begin > 1) model[static_cast<size_t>(root)] = true;
    begin = end;
  }
  return model;
}

}  // namespace strata::import
