#include "trace/activity_upgrade.h"

#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/level.h"

namespace strata::trace {
namespace {

bool contains_ci(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() && std::tolower(static_cast<unsigned char>(text[i + j])) == needle[j]) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && contains_ci(text.substr(0, prefix.size()), prefix);
}

// The copy direction a 1.0 analysis read into a span's name (needles lower case).
ActivityType direction_in_name(std::string_view name) {
  if (!contains_ci(name, "memcpy") && !contains_ci(name, "copy")) return ActivityType::kUnknown;
  for (std::string_view d : {"htod", "h2d", "host to device", "hosttodevice"})
    if (contains_ci(name, d)) return ActivityType::kMemcpyHtoD;
  for (std::string_view d : {"dtoh", "d2h", "device to host", "devicetohost"})
    if (contains_ci(name, d)) return ActivityType::kMemcpyDtoH;
  for (std::string_view d : {"dtod", "d2d", "device to device"})
    if (contains_ci(name, d)) return ActivityType::kMemcpyDtoD;
  for (std::string_view d : {"ptop", "p2p", "peer"})
    if (contains_ci(name, d)) return ActivityType::kMemcpyPtoP;
  return ActivityType::kUnknown;
}

ActivityType legacy_device_work(std::string_view name) {
  if (ActivityType d = direction_in_name(name); d != ActivityType::kUnknown) return d;
  if (starts_with_ci(name, "memcpy")) return ActivityType::kMemcpyOther;
  if (contains_ci(name, "memset")) return ActivityType::kMemset;
  return kernel_activity(name);
}

ActivityType legacy_host_op(std::string_view name) {
  if (ActivityType d = direction_in_name(name); d != ActivityType::kUnknown) return d;
  if (name == "memcpy") return ActivityType::kTensorCopy;
  return framework_op_activity(name);
}

ActivityType from_cupti_category(std::string_view category, std::string_view copy_kind, std::string_view name) {
  if (category == "kernel") return kernel_activity(name);
  if (category == "memcpy") return memcpy_activity(copy_kind);
  if (category == "memset") return ActivityType::kMemset;
  if (category == "sync") return ActivityType::kSync;
  if (category == "graph") return ActivityType::kGraph;
  if (category == "memory") return ActivityType::kMemoryEvent;
  if (category == "overhead") return ActivityType::kOverhead;
  return ActivityType::kUnknown;
}

// Spellings of one fact that 1.0 analyses accepted, in the order they were read; the canonical key
// is one of them or is added in front.
struct KeyGroup {
  std::string_view canonical;
  std::array<std::string_view, 5> aliases;
};

constexpr KeyGroup kKeyGroups[] = {
    {attr_keys::kBatch, {"batch", "batch_size"}},
    {attr_keys::kOpType, {"type", "op_type", "layer_type"}},
    {attr_keys::kModule, {"module", "scope", "layer_name"}},
    {attr_keys::kShapes, {"shape", "shapes", "input_shapes", "Input Dims", "input_dims"}},
    {attr_keys::kAllocBytes, {"alloc_bytes", "allocated_bytes", "memory_bytes", "cpu_memory_usage", "cuda_memory_usage"}},
    {attr_keys::kFlops, {"flops", "flop_count"}},
    {attr_keys::kDramReadBytes, {"dram_read_bytes", "dram_bytes_read"}},
    {attr_keys::kDramWriteBytes, {"dram_write_bytes", "dram_bytes_write"}},
    {attr_keys::kBytes, {"bytes", "dram_bytes", "memory_bytes_accessed"}},
    {attr_keys::kAchievedOccupancy, {"achieved_occupancy", "est. achieved occupancy %"}},
    {attr_keys::kExternalCorrelationId, {"External id"}},
    {attr_keys::kIssuingSpanId, {"external_id"}},
    {attr_keys::kInputTypes, {"Input type"}},
    {attr_keys::kRegistersPerThread, {"registers per thread"}},
    {attr_keys::kSharedMemoryBytes, {"shared memory"}},
};

// A key group resolved against the trace's string pool.
struct ResolvedGroup {
  uint32_t canonical = UINT32_MAX;   // UINT32_MAX until interned (on the first rename)
  std::string_view canonical_text;
  std::vector<uint32_t> alias_ids;   // in priority order; UINT32_MAX where the pool lacks the text
};

class Upgrader {
 public:
  explicit Upgrader(Trace* t) : t_(*t) {
    auto id = [&](std::string_view s) { return t_.strings.find(s); };
    category_ = id("category");
    copy_kind_ = id("copy_kind");
    api_ = id("api");
    source_ = id("source");
    sync_kind_ = id("cuda_sync_kind");
    python_id_ = id("Python id");
    for (const KeyGroup& g : kKeyGroups) {
      ResolvedGroup r;
      r.canonical_text = g.canonical;
      r.canonical = id(g.canonical);
      bool any = false;
      for (std::string_view a : g.aliases) {
        if (a.empty()) break;
        r.alias_ids.push_back(id(a));
        any = any || r.alias_ids.back() != UINT32_MAX;
      }
      if (any) groups_.push_back(std::move(r));  // a pool without these spellings: nothing to rename
    }
  }

  UpgradeCounts run(size_t first) {
    UpgradeCounts c;
    for (size_t i = first; i < t_.spans.size(); ++i) {
      SpanRecord& s = t_.spans[i];
      if (s.activity != 0) continue;
      s.activity = static_cast<uint8_t>(infer(i));
      if (s.activity != 0) ++c.spans_typed;
      c.keys_renamed += rename_keys(i);
    }
    return c;
  }

 private:
  std::string_view string_attr(size_t i, uint32_t key) const {
    if (key == UINT32_MAX) return {};
    for (const AttrRecord& a : t_.attributes(i))
      if (a.key == key && a.type == static_cast<uint8_t>(AttrType::kString))
        return t_.strings.get(static_cast<uint32_t>(a.value.u));
    return {};
  }
  bool has_attr(size_t i, uint32_t key) const {
    if (key == UINT32_MAX) return false;
    for (const AttrRecord& a : t_.attributes(i))
      if (a.key == key) return true;
    return false;
  }

  // The name rules, once per distinct name (a trace repeats few names many times).
  ActivityType by_name(uint32_t name, bool device) {
    std::vector<uint8_t>& cache = device ? device_names_ : host_names_;
    if (name >= cache.size()) cache.resize(static_cast<size_t>(name) + 1, 0xFF);
    if (cache[name] == 0xFF)
      cache[name] = static_cast<uint8_t>(device ? legacy_device_work(t_.strings.get(name))
                                                : legacy_host_op(t_.strings.get(name)));
    return static_cast<ActivityType>(cache[name]);
  }

  ActivityType infer(size_t i) {
    const SpanRecord& s = t_.spans[i];
    const std::string_view name = t_.name(s);
    if (s.kind == static_cast<uint8_t>(SpanKind::kCounter)) return ActivityType::kCounter;
    if (s.kind == static_cast<uint8_t>(SpanKind::kSample)) return ActivityType::kCpuSample;
    const std::string_view category = string_attr(i, category_);
    if (ActivityType c = from_cupti_category(category, string_attr(i, copy_kind_), name); c != ActivityType::kUnknown)
      return c;
    const bool instant = s.kind == static_cast<uint8_t>(SpanKind::kInstant);
    if (instant) return name == "[memory]" ? ActivityType::kMemoryEvent : ActivityType::kAnnotation;
    switch (static_cast<Level>(s.level)) {
      case Level::kDevice:
        if (s.kind == static_cast<uint8_t>(SpanKind::kExecution)) return by_name(s.name, true);
        return has_attr(i, sync_kind_) ? ActivityType::kSync : ActivityType::kDeviceRange;
      case Level::kRuntimeApi: {
        if (string_attr(i, api_) == "driver") return ActivityType::kDriverCall;
        const bool driver_name = name.size() > 2 && name[0] == 'c' && name[1] == 'u' &&
                                 std::isupper(static_cast<unsigned char>(name[2]));
        return driver_name ? ActivityType::kDriverCall : ActivityType::kRuntimeCall;
      }
      case Level::kLibrary:
        return ActivityType::kLibraryCall;
      case Level::kLayer:
        if (string_attr(i, source_) == "nvtx") return ActivityType::kAnnotation;
        return by_name(s.name, false);
      default:
        if (has_attr(i, python_id_)) return ActivityType::kPythonFunction;
        return ActivityType::kAnnotation;
    }
  }

  uint64_t rename_keys(size_t i) {
    if (groups_.empty()) return 0;
    uint64_t renamed = 0;
    const uint32_t begin = t_.attr_begin[i], end = begin + t_.spans[i].attr_count;  // valid after a sort too
    for (ResolvedGroup& g : groups_) {
      // The spelling a 1.0 analysis read first, and where the canonical key already sits.
      size_t best_rank = SIZE_MAX;
      uint32_t best_pos = 0, first_canonical = UINT32_MAX;
      for (uint32_t p = begin; p < end; ++p) {
        const uint32_t key = t_.attrs[p].key;
        for (size_t rank = 0; rank < g.alias_ids.size() && rank < best_rank; ++rank)
          if (g.alias_ids[rank] == key) {
            best_rank = rank;
            best_pos = p;
          }
        if (g.canonical != UINT32_MAX && key == g.canonical && first_canonical == UINT32_MAX) first_canonical = p;
      }
      if (best_rank == SIZE_MAX) continue;
      if (t_.attrs[best_pos].key == g.canonical) continue;  // read first already
      if (g.canonical == UINT32_MAX) g.canonical = t_.strings.intern(g.canonical_text);
      t_.attrs[best_pos].key = g.canonical;
      ++renamed;
      // An attribute already under the canonical key was read after this one: keep that order.
      if (first_canonical != UINT32_MAX && first_canonical < best_pos)
        std::swap(t_.attrs[first_canonical], t_.attrs[best_pos]);
    }
    return renamed;
  }

  Trace& t_;
  uint32_t category_, copy_kind_, api_, source_, sync_kind_, python_id_;
  std::vector<ResolvedGroup> groups_;
  std::vector<uint8_t> device_names_, host_names_;  // name id -> type by the name rules; 0xFF: not yet
};

}  // namespace

UpgradeCounts upgrade_untyped_spans(Trace* trace, size_t first) { return Upgrader(trace).run(first); }

}  // namespace strata::trace
