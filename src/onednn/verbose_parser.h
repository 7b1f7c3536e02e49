// Parser for oneDNN's verbose output (ONEDNN_VERBOSE), the fallback source of library spans when
// dnnl_primitive_execute cannot be interposed (oneDNN linked statically into the framework, as in
// PyTorch's pip wheels). Pure text in, views out: no oneDNN headers, no allocation, so the same
// code serves the in-process capture, the unit tests and the fuzzer.
//
// The line layouts this accepts (checked against oneDNN's sources, src/common/verbose.{hpp,cpp}
// and primitive_iface.cpp, at the tags named):
//   v2.x - v3.2   onednn_verbose[,TS],exec,ENGINE,PRIM,IMPL,PROP,MDS,ATTRS,AUX,DESC,MS
//   v3.3 - v3.5   onednn_verbose[,TS],primitive,exec,ENGINE,...,DESC,MS
//   v3.6 -        onednn_verbose,v1[,TS],primitive,exec,ENGINE,...,DESC,MS
// (v1.x printed "dnnl_verbose", v0.x "mkldnn_verbose"; both markers are accepted.) TS, printed
// with ONEDNN_VERBOSE_TIMESTAMP=1, is get_msec() taken just before the primitive ran: gettimeofday,
// i.e. CLOCK_REALTIME in ms since the epoch (std::to_string: six decimals). MS is the execution
// time in ms ("%g"). Creation ("create:cache_miss"), info, error and graph lines are recognized
// and classified, not turned into spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "onednn/primitive_cost.h"

namespace strata::onednn {

enum class VerboseEvent : uint8_t {
  kNotVerbose,  // no oneDNN marker: someone else's output
  kExec,        // a primitive execution: becomes a span
  kCreate,      // primitive creation (ONEDNN_VERBOSE=2 / profile_create)
  kInfo,        // version, ISA, runtime, template header lines
  kOther,       // error, warn, check, dispatch, graph/ukernel components
  kMalformed,   // has the marker but cannot be read; `malformed` says why
};

// Why an exec line (or a line with a marker) could not be read. Counted, never fatal.
enum class Malformed : uint8_t {
  kNone = 0,
  kNoOperation,     // marker, then nothing recognizable
  kTooFewFields,    // an exec line with fewer than the 9 fields after "exec"
  kBadTimestamp,    // a field in the timestamp position that is not a decimal number
  kBadDuration,     // last field not a finite, non-negative number of ms
  kEmptyPrimitive,  // exec line with an empty primitive kind
  kCount,
};
const char* malformed_name(Malformed cause);

struct VerboseLine {
  VerboseEvent event = VerboseEvent::kNotVerbose;
  Malformed malformed = Malformed::kNone;
  std::string_view marker;     // "onednn_verbose", "dnnl_verbose", "mkldnn_verbose"
  std::string_view version;    // "v1" (v3.6+), empty before
  std::string_view component;  // "primitive", "graph", ... (v3.3+), empty before
  std::string_view operation;  // "exec", "create:cache_miss", "info", "error", ...
  bool has_timestamp = false;
  int64_t timestamp_ns = 0;  // TS converted exactly from its decimal text: realtime ns since epoch
  // Exec lines: the primitive descriptor's info string, field by field.
  std::string_view engine, primitive, impl, prop_kind, mds, attrs, aux, desc;
  double duration_ms = 0;
};

// Parses one line; a trailing "\n" (or "\r\n") is ignored. Views point into `line`.
VerboseLine parse_verbose_line(std::string_view line);

struct VerboseStats {
  uint64_t lines = 0, exec = 0, create = 0, info = 0, other = 0, not_verbose = 0;
  uint64_t malformed[static_cast<size_t>(Malformed::kCount)] = {};
  uint64_t malformed_total() const;
  void count(const VerboseLine& line);
};

// The interposer's "shapes" attribute ("src:[1,3,224,224] weights:[64,3,7,7] dst:[1,64,112,112]",
// labels in the fixed order src, diff_src, weights, diff_weights, dst, diff_dst), rebuilt from the
// problem descriptor of the kinds whose descriptor names every tensor's dims: convolution,
// deconvolution, inner_product, pooling, matmul, reorder and forward eltwise. Returns false (and
// leaves `out` empty) for other kinds or a descriptor it cannot read.
bool shapes_from_desc(std::string_view primitive, std::string_view prop_kind, std::string_view desc,
                      std::string* out);

// The problem of an exec line for primitive_cost(): kind, propagation kind, tensor dims from DESC,
// element sizes and bias presence from MDS, pooling algorithm and batch norm flags from AUX. False
// for kinds without a cost formula or a descriptor it cannot read.
bool problem_from_verbose(const VerboseLine& line, PrimitiveProblem* out);

// The data type of the first memory descriptor in MDS ("src_f32::blocked:abcd:f0" in v2.x,
// "src:f32::blocked:abcd::f0" in v3.x -> "f32"); empty when there is none.
std::string_view first_dtype(std::string_view mds);

// Where an execution lies on CLOCK_MONOTONIC (Strata's clock). now_mono_ns/now_real_ns are
// CLOCK_MONOTONIC and CLOCK_REALTIME read back to back when the line reached the capture, which is
// on the executing thread right after the execution (oneDNN prints before returning). With a
// timestamp, the start is TS moved onto the monotonic clock by the offset between the two clocks
// now; without one, or if that disagrees with the arrival time by more than kMaxClockSkewNs (the
// realtime clock was stepped), the execution is taken to have ended on arrival.
struct Placement {
  int64_t start_ns = 0, end_ns = 0;
  bool from_timestamp = false;
};
inline constexpr int64_t kMaxClockSkewNs = 10'000'000;
Placement place_execution(const VerboseLine& line, int64_t now_mono_ns, int64_t now_real_ns);

// Joins the pieces one thread prints into whole lines. oneDNN prints a line per printf call except
// its v2.x template header, printed in two calls; a piece that ends without "\n" is held until the
// rest arrives. A held piece longer than kMaxLine is given up as is (on_line gets it unterminated).
class LineAssembler {
 public:
  static constexpr size_t kMaxLine = 1 << 16;

  // Calls on_line(std::string_view) for every complete line (without its "\n") in held + piece.
  template <class OnLine>
  void feed(std::string_view piece, OnLine&& on_line) {
    while (!piece.empty()) {
      size_t nl = piece.find('\n');
      if (nl == std::string_view::npos) {
        held_.append(piece);
        if (held_.size() > kMaxLine) {
          on_line(std::string_view(held_));
          held_.clear();
        }
        return;
      }
      if (held_.empty()) {
        on_line(piece.substr(0, nl));
      } else {
        held_.append(piece.substr(0, nl));
        on_line(std::string_view(held_));
        held_.clear();
      }
      piece.remove_prefix(nl + 1);
    }
  }
  bool pending() const { return !held_.empty(); }
  // The held partial line, emptied (at exit: printed as it would have been).
  std::string take_pending() { return std::exchange(held_, std::string()); }

 private:
  std::string held_;
};

}  // namespace strata::onednn
