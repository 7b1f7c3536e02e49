// CPU profiles from a trace's samples (`strata profile`): shares by function (self: the sample's
// leaf; total: anywhere on its stack) or by op (the span each sample was taken in: the innermost
// layer-level span, or "outside any op" for the Python and framework time between ops), with the
// functions that took each op's samples. Native frames are named when read (symbolize::Symbolizer);
// Python frames carry their function, file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolize/symbolizer.h"
#include "trace/trace.h"

namespace strata::profile {

// A frame's name, resolved once per frame id.
struct FrameName {
  std::string function;  // demangled native name, Python qualified name, or "module+0xOFFSET"
  std::string module;    // the mapped file's name ("" for Python frames)
  std::string file;      // Python: source file
  uint32_t line = 0;     // Python: line
  bool python = false;
  bool known = true;     // false: no symbol covered the address
};

class FrameNamer {
 public:
  FrameNamer(const trace::Trace& trace, symbolize::Symbolizer* symbolizer)
      : trace_(trace), symbolizer_(symbolizer) {}
  const FrameName& name(uint32_t frame_id);
  // The grouping key of a frame's function ("function" for native code, "function (file)" for Python).
  const std::string& function_key(uint32_t frame_id);
  // --by module: the mapped file's name (Python: the source file); --by line: "function (file:line)"
  // for Python frames, the function key for native ones.
  const std::string& module_key(uint32_t frame_id);
  const std::string& line_key(uint32_t frame_id);

 private:
  const trace::Trace& trace_;
  symbolize::Symbolizer* symbolizer_;
  std::unordered_map<uint32_t, FrameName> names_;
  std::unordered_map<uint32_t, std::string> keys_, module_keys_, line_keys_;
};

// function: the sample's leaf (self) and every function on its stack (total); module: the same by
// mapped file (Python frames by source file); line: Python frames by file:line (native frames by
// function: their line tables are not read); op: the innermost layer-level span open at the sample;
// layer: the outermost one (the module around the ops).
enum class ProfileBy { kFunction, kOp, kLayer, kModule, kLine };
bool parse_profile_by(std::string_view text, ProfileBy* by);

struct ProfileOptions {
  ProfileBy by = ProfileBy::kFunction;
  size_t top = 30;
  size_t culprits = 3;  // --by op: functions listed under each op
  int event = 0;        // which sampled event (0: task-clock / CPU time)
};

struct ProfileRow {
  std::string name;
  std::string where;  // module, or file:line of the hottest line
  uint64_t self = 0;
  uint64_t total = 0;
  std::vector<std::pair<std::string, uint64_t>> culprits;  // --by op: leaf functions and their samples
};

struct Profile {
  uint64_t samples = 0;        // weighted samples of the event
  uint64_t period_ns = 0;      // CPU time per sample (0: unknown)
  std::vector<ProfileRow> rows;  // by self, then total, descending
  uint64_t outside_ops = 0;    // --by op: samples with no op (layer span) open
  uint64_t no_span = 0;        // samples with no span at all
  std::vector<std::string> notes;
};

inline constexpr const char* kOutsideAnyOp = "(outside any op: Python / framework overhead)";

Profile build_profile(const trace::Trace& trace, const ProfileOptions& options, FrameNamer& namer);
// The table as text (shares in percent of all samples of the event).
std::string format_profile(const Profile& profile, const ProfileOptions& options);
// Folded stacks, the text flame-graph tools read: "frame;frame;...;leaf count" per distinct stack,
// root first, the layer-level spans open at the sample (outermost first) as "[op] NAME" frames at
// the root. ';' inside a name becomes ':' (the separator), line breaks become spaces.
std::string format_collapsed(const trace::Trace& trace, const ProfileOptions& options, FrameNamer& namer);
inline constexpr const char* kOpFramePrefix = "[op] ";

}  // namespace strata::profile
