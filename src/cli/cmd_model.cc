// strata model FILE.onnx...: the model processor. Loads ONNX models, runs shape inference, prints
// the layer IR and the unique-layer counts per model and across models (Benanza Figure 4).
#include <iostream>
#include <map>
#include <optional>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/lowerbound_options.h"
#include "export/table_render.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/ir/unique_layers.h"

namespace strata::cli {

namespace lb = strata::lowerbound;
using table::Cell;

int run_model(int argc, char** argv) {
  CommandOptions opt;
  std::string error;
  CommandLine cl(
      "model",
      "Load ONNX models (shape inference included) and count unique layers: two layers are the same "
      "when operator, input/weight/output shapes and attributes match (weights ignored); list the "
      "convolutions `bench run --fusion` fuses with their consumers.");
  if (int code = parse_command_options(cl, argc, argv, kFormatOption | kLayersOption, &opt); code >= 0)
    return code;
  if (opt.models.empty()) return cl.usage_error("no model given");
  std::vector<lb::LayerModel> models;
  if (!check_inputs(opt.models, InputKind::kFile, &error) || !load_models(opt.models, &models, &error))
    return fail("model", error, 1);
  lb::UniqueLayerSet set;
  for (const lb::LayerModel& m : models) set.add_model(m);

  std::vector<table::Table> tables;
  table::Table per_model;
  per_model.name = "unique_layers";
  per_model.title = "Unique layers per model and across models";
  per_model.columns = {"model",
                       "opset",
                       "layers",
                       "unique",
                       "unique_pct",
                       "shared_with_other_models",
                       "new_vs_earlier_models"};
  for (size_t i = 0; i < models.size(); ++i) {
    const lb::ModelUniqueStats& s = set.per_model()[i];
    per_model.rows.push_back(
        {Cell::text(s.model), Cell::integer(models[i].opset), Cell::integer(static_cast<int64_t>(s.layers)),
         Cell::integer(static_cast<int64_t>(s.unique)),
         Cell::real(s.layers ? 100.0 * static_cast<double>(s.unique) / static_cast<double>(s.layers) : 0, 1),
         Cell::integer(static_cast<int64_t>(s.shared)), Cell::integer(static_cast<int64_t>(s.new_unique))});
  }
  if (models.size() > 1) {
    uint64_t total = set.total_layers(), unique = set.layers().size();
    per_model.rows.push_back(
        {Cell::text("ALL"), Cell::empty(), Cell::integer(static_cast<int64_t>(total)),
         Cell::integer(static_cast<int64_t>(unique)),
         Cell::real(total ? 100.0 * static_cast<double>(unique) / static_cast<double>(total) : 0, 1),
         Cell::empty(), Cell::empty()});
  }
  for (const lb::LayerModel& m : models)
    if (m.unknown_shapes)
      per_model.notes.push_back(
          "warning: " + m.path + ": " + std::to_string(m.unknown_shapes) +
          " tensors without an inferred shape (dynamic dims?): their layers cannot be benchmarked");
  tables.push_back(std::move(per_model));

  table::Table by_type;
  by_type.name = "unique_by_type";
  by_type.title = "Unique layers by operator type (across all models)";
  by_type.columns = {"type", "unique", "occurrences"};
  std::map<std::string, std::pair<int64_t, int64_t>> types;
  for (const lb::UniqueLayer& u : set.layers()) {
    ++types[u.op_type].first;
    types[u.op_type].second += static_cast<int64_t>(u.occurrences);
  }
  for (const auto& [type, counts] : types)
    by_type.rows.push_back({Cell::text(type), Cell::integer(counts.first), Cell::integer(counts.second)});
  tables.push_back(std::move(by_type));

  // The convolutions `--fusion` benchmarks fused with their consumers, per model and post-ops.
  table::Table fusion;
  fusion.name = "fusion_chains";
  fusion.title =
      "Fusable chains: convolutions with an activation or residual Add folded in (oneDNN post-ops)";
  fusion.columns = {"model", "post_ops", "convolutions", "layers_absorbed"};
  for (const lb::LayerModel& m : models) {
    std::map<std::string, std::pair<int64_t, int64_t>> chains;  // post-ops -> (convolutions, absorbed)
    for (size_t i = 0; i < m.layers.size(); ++i)
      if (std::optional<lb::FusionChain> chain = lb::fusion_chain(m, i)) {
        ++chains[chain->post_ops].first;
        chains[chain->post_ops].second += static_cast<int64_t>(chain->absorbed.size());
      }
    for (const auto& [post_ops, counts] : chains)
      fusion.rows.push_back({Cell::text(m.name), Cell::text(post_ops), Cell::integer(counts.first),
                             Cell::integer(counts.second)});
  }
  fusion.notes.push_back(
      "an activation (Relu, Clip, Sigmoid, Tanh, Elu, LeakyRelu) or a residual Add (+ activation) "
      "that is the only consumer; models without a row have none");
  tables.push_back(std::move(fusion));

  if (opt.layers)
    for (const lb::LayerModel& m : models) {
      table::Table t;
      t.name = "layers_" + m.name;
      t.title = "Layers of " + m.name;
      t.columns = {"index", "name", "type", "inputs", "weights", "outputs", "attributes", "preds"};
      for (size_t i = 0; i < m.layers.size(); ++i) {
        const lb::Layer& l = m.layers[i];
        std::vector<std::string> in, w, out, attrs, preds;
        for (const auto& s : l.input_shapes) in.push_back(lb::shape_text(s));
        for (const auto& s : l.weight_shapes) w.push_back(lb::shape_text(s));
        for (const auto& s : l.output_shapes) out.push_back(lb::shape_text(s));
        for (const auto& [k, v] : l.attributes) attrs.push_back(k + "=" + v);
        for (uint32_t p : l.preds) preds.push_back(std::to_string(p));
        t.rows.push_back({Cell::integer(static_cast<int64_t>(i)), Cell::text(l.name), Cell::text(l.op_type),
                          Cell::text(join(in, " ")), Cell::text(join(w, " ")), Cell::text(join(out, " ")),
                          Cell::text(join(attrs, " ")), Cell::text(join(preds, " "))});
      }
      tables.push_back(std::move(t));
    }
  exporter::TableFormat format;
  exporter::parse_table_format(opt.format, &format);
  exporter::render_tables(tables, format, std::cout);
  return 0;
}

}  // namespace strata::cli
