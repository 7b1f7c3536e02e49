// Appending a trace read on its own (one input of several, read on a thread of its own) to the
// trace of the inputs before it, so that the result is the trace one builder reading the inputs in
// order gives: open_traces reads the inputs in parallel and appends them here in input order.
#pragma once

#include <cstddef>

#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::trace {

// Whether `part` can be appended exactly. CPU samples cannot yet: their mappings, frames and stacks
// are deduplicated across inputs while read, and merging those tables is not written (the caller
// then reads the inputs serially).
bool can_append(const Trace& part);

// Appends `part` (read by its own builder `part_builder`, not finished) to the trace `into` that
// `into_builder` is building: its strings are interned into `into`'s pool in their id order (so ids
// come out as the serial read gives them), span names, attribute keys and string values renumbered,
// processes shifted by the processes before it. `positional_stream_ids`: the part's reader numbers
// its processes' stream ids by position in the trace (the importers: top byte a tag, the rest
// position + 1), so they are renumbered to their position in `into`. `part` is left empty.
void append_trace(Trace&& part, const TraceBuilder& part_builder, bool positional_stream_ids, Trace* into,
                  TraceBuilder* into_builder);

}  // namespace strata::trace
