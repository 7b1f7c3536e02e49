#include "annotate/annotate.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace strata::annotate {
namespace {

std::optional<size_t> event_index(const std::vector<std::string>& events, std::string_view name) {
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i] == name) return i;
  return std::nullopt;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

// Attributes every sampled address to its instruction (and block); counts per event.
void attribute_samples(const FunctionSamples& input, Annotation* out, std::optional<size_t> cache_event,
                       std::optional<size_t> branch_event) {
  out->instruction_samples.assign(out->instructions.size(), 0);
  for (BlockRow& row : out->rows) {
    if (cache_event) row.cache_misses = 0;
    if (branch_event) row.branch_misses = 0;
  }
  for (const auto& [address, counts] : input.samples) {
    // The instruction holding the address: the last one starting at or before it.
    auto it = std::upper_bound(out->instructions.begin(), out->instructions.end(), address,
                               [](uint64_t a, const Instruction& ins) { return a < ins.address; });
    if (it == out->instructions.begin()) continue;
    --it;
    if (address >= it->address + it->size) continue;
    const size_t index = static_cast<size_t>(it - out->instructions.begin());
    const uint64_t time = counts.empty() ? 0 : counts[0];
    if (address != it->address) out->samples_off_boundary += time;
    out->instruction_samples[index] += time;
    out->samples += time;
    BlockRow& row = out->rows[block_of(out->blocks, it->address)];
    row.samples += time;
    if (cache_event && *cache_event < counts.size()) *row.cache_misses += counts[*cache_event];
    if (branch_event && *branch_event < counts.size()) *row.branch_misses += counts[*branch_event];
  }
}

}  // namespace

void rank_culprits(std::vector<BlockRow>* rows, const AnnotateOptions& options,
                   std::optional<double>* reference) {
  uint64_t total = 0;
  for (const BlockRow& r : *rows) total += r.samples;
  const double floor =
      std::max(static_cast<double>(options.min_samples), options.min_share * static_cast<double>(total));
  reference->reset();
  for (BlockRow& r : *rows) {
    r.frequency.reset();
    r.excess.reset();
    r.stall_ratio.reset();
    r.culprit_rank = 0;
    if (!r.cycles || *r.cycles <= 0) continue;
    r.frequency = static_cast<double>(r.samples) / *r.cycles;
    // The least-stalled block with enough samples sets the reference frequency (DCPI's F from the
    // instructions with the fewest stalls).
    if (static_cast<double>(r.samples) >= floor && (!*reference || *r.frequency < **reference))
      *reference = *r.frequency;
  }
  if (!*reference || **reference <= 0) return;
  std::vector<BlockRow*> culprits;
  for (BlockRow& r : *rows) {
    if (!r.frequency) continue;
    r.excess = static_cast<double>(r.samples) - **reference * *r.cycles;
    r.stall_ratio = *r.frequency / **reference;
    if (*r.stall_ratio >= options.culprit_ratio && *r.excess > 0) culprits.push_back(&r);
  }
  std::sort(culprits.begin(), culprits.end(), [](const BlockRow* a, const BlockRow* b) {
    return *a->excess != *b->excess ? *a->excess > *b->excess : a->start < b->start;
  });
  for (size_t i = 0; i < culprits.size(); ++i) culprits[i]->culprit_rank = i + 1;
}

bool annotate_function(const FunctionSamples& input, Disassembler& disassembler, CostModel* costs,
                       const AnnotateOptions& options, Annotation* out, std::string* error) {
  out->function = input.function;
  out->module_path = input.module_path;
  out->address = input.address;
  out->size = input.bytes.size();
  out->notes = input.notes;
  out->culprit_ratio = options.culprit_ratio;
  if (input.bytes.empty()) {
    *error = input.function + " in " + input.module_path +
             ": the function has no bytes (size 0 in the symbol table)";
    return false;
  }
  if (!disassembler.disassemble(input.bytes, input.address, &out->instructions, error)) return false;
  out->blocks = split_basic_blocks(out->instructions);
  for (size_t b = 0; b < out->blocks.size(); ++b) {
    BlockRow row;
    row.block = b;
    row.start = out->blocks[b].start;
    row.end = out->blocks[b].end;
    row.instructions = out->blocks[b].last - out->blocks[b].first;
    out->rows.push_back(row);
  }
  const auto cache_event = event_index(input.events, "cache-misses");
  const auto branch_event = event_index(input.events, "branch-misses");
  out->have_cache_misses = cache_event.has_value();
  out->have_branch_misses = branch_event.has_value();
  attribute_samples(input, out, cache_event, branch_event);
  if (!cache_event || !branch_event)
    out->notes.push_back(
        "no hardware PMU events in this trace (no cache-misses/branch-misses samples: a VM without a PMU, or "
        "not "
        "recorded): those columns are absent, not zero");
  if (out->samples_off_boundary > 0)
    out->notes.push_back(
        std::to_string(out->samples_off_boundary) +
        " samples fell inside an instruction, not on its start (code changed since recording?)");
  if (costs != nullptr) {
    std::vector<std::vector<Instruction>> block_code;
    for (const BasicBlock& b : out->blocks)
      block_code.emplace_back(out->instructions.begin() + static_cast<std::ptrdiff_t>(b.first),
                              out->instructions.begin() + static_cast<std::ptrdiff_t>(b.last));
    std::vector<std::optional<BlockCost>> block_costs;
    std::string why;
    if (costs->estimate(block_code, &block_costs, &out->notes, &why)) {
      out->have_costs = true;
      out->cost_model = costs->describe();
      for (size_t b = 0; b < out->rows.size() && b < block_costs.size(); ++b)
        if (block_costs[b]) out->rows[b].cycles = block_costs[b]->cycles_per_iteration();
    } else {
      out->notes.push_back(why);
    }
  } else {
    out->notes.push_back("no static cost model: the table has no cycle, F or culprit columns");
  }
  if (out->have_costs) rank_culprits(&out->rows, options, &out->reference_frequency);
  return true;
}

namespace {

table::Cell optional_real(const std::optional<double>& v, int precision = 3) {
  return v ? table::Cell::real(*v, precision) : table::Cell::empty();
}
table::Cell optional_count(const std::optional<uint64_t>& v) {
  return v ? table::Cell::integer(static_cast<int64_t>(*v)) : table::Cell::empty();
}
double share(uint64_t part, uint64_t total) {
  return total ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0;
}

table::Table block_table(const Annotation& a) {
  table::Table t;
  t.name = "annotate_blocks";
  t.title =
      "Basic blocks of " + a.function + " (" + a.module_path + ")" + (a.have_costs ? ", culprits first" : "");
  // Culprits need the static costs: without them the column would always be empty.
  if (a.have_costs) t.columns.push_back("culprit");
  for (const char* c : {"block", "start", "end", "instructions", "samples", "share_pct"})
    t.columns.push_back(c);
  if (a.have_costs)
    for (const char* c : {"static_cycles", "frequency_F", "excess_samples", "stall_ratio"})
      t.columns.push_back(c);
  t.columns.push_back("cache_misses");
  t.columns.push_back("branch_misses");
  std::vector<const BlockRow*> order;
  for (const BlockRow& r : a.rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const BlockRow* x, const BlockRow* y) {
    if ((x->culprit_rank != 0) != (y->culprit_rank != 0)) return x->culprit_rank != 0;
    if (x->culprit_rank != y->culprit_rank) return x->culprit_rank < y->culprit_rank;
    return x->samples > y->samples;
  });
  for (const BlockRow* r : order) {
    std::vector<table::Cell> row;
    if (a.have_costs)
      row.push_back(r->culprit_rank ? table::Cell::integer(static_cast<int64_t>(r->culprit_rank))
                                    : table::Cell::empty());
    row.insert(row.end(),
               {table::Cell::integer(static_cast<int64_t>(r->block)), table::Cell::text(hex(r->start)),
                table::Cell::text(hex(r->end)), table::Cell::integer(static_cast<int64_t>(r->instructions)),
                table::Cell::integer(static_cast<int64_t>(r->samples)),
                table::Cell::real(share(r->samples, a.samples), 1)});
    if (a.have_costs) {
      row.push_back(optional_real(r->cycles, 2));
      row.push_back(optional_real(r->frequency, 2));
      row.push_back(optional_real(r->excess, 1));
      row.push_back(optional_real(r->stall_ratio, 2));
    }
    row.push_back(optional_count(r->cache_misses));
    row.push_back(optional_count(r->branch_misses));
    t.rows.push_back(std::move(row));
  }
  t.notes.push_back(std::to_string(a.samples) + " samples in " + a.function + " (" + std::to_string(a.size) +
                    " bytes at " + hex(a.address) + ", " + std::to_string(a.blocks.size()) +
                    " basic blocks)");
  if (a.have_costs) {
    t.notes.push_back("static_cycles: " + a.cost_model +
                      ", cycles per pass of the block; F = samples / static_cycles");
    if (a.reference_frequency) {
      char buf[160];
      std::snprintf(
          buf, sizeof(buf),
          "F0 = %.2f (the least-stalled block with enough samples); excess = samples - F0 x static_cycles; "
          "culprits: F >= %.3g x F0",
          *a.reference_frequency, a.culprit_ratio);
      t.notes.push_back(buf);
    } else {
      t.notes.push_back("too few samples in any block for a reference frequency: no culprits ranked");
    }
  }
  for (const std::string& n : a.notes) t.notes.push_back(n);
  return t;
}

table::Table instruction_table(const Annotation& a) {
  table::Table t;
  t.name = "annotate_instructions";
  t.title = "Instructions of " + a.function;
  t.columns = {"address", "block", "samples", "share_pct", "instruction"};
  for (size_t i = 0; i < a.instructions.size(); ++i) {
    const Instruction& ins = a.instructions[i];
    t.rows.push_back({table::Cell::text(hex(ins.address)),
                      table::Cell::integer(static_cast<int64_t>(block_of(a.blocks, ins.address))),
                      table::Cell::integer(static_cast<int64_t>(a.instruction_samples[i])),
                      table::Cell::real(share(a.instruction_samples[i], a.samples), 1),
                      table::Cell::text(ins.text())});
  }
  return t;
}

}  // namespace

std::vector<table::Table> annotation_tables(const Annotation& annotation) {
  return {block_table(annotation), instruction_table(annotation)};
}

}  // namespace strata::annotate
