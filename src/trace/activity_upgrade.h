// Traces written before format 1.1 carry no activity type (SpanRecord::activity reads 0) and spell
// some attributes the way their tracer or importer did ("type", "shape", "Input Dims", "batch_size",
// "External id"). This is the one place that turns such spans into today's vocabulary, once, when
// they are loaded, so that no analysis ever guesses what a span is from its name:
//
// 1. Activity type, from what the 1.0 writers left, in this order:
//    - the record's kind: counter -> counter, sample -> cpu_sample;
//    - CUPTI spans' "category" attribute (kernel, memcpy + "copy_kind", memset, sync, graph, memory,
//      overhead) and "api" (runtime/driver);
//    - device work without it (imported Kineto, ONNX Runtime, TensorFlow spans saved by 1.0): the
//      name rules the 1.0 analyses applied (a name holding "memcpy" or "copy" and a direction code
//      is a copy in that direction, a name starting "memcpy" a copy, one holding "memset" a memset,
//      anything else a kernel; device-level spans that are not executions are syncs when they carry
//      Kineto's "cuda_sync_kind", device ranges otherwise);
//    - host spans: library level -> library_call; runtime level -> runtime_call (driver_call for
//      "cu" + capital names, Kineto's cuda_driver calls); layer level -> the 1.0 host-copy rules
//      (a copy direction in the name, or PyTorch's copying ops and "memcpy" -> tensor_copy), NVTX
//      ranges (source=nvtx) -> annotation, else cpu_op; Python frames (Kineto's "Python id")
//      -> python_function; every other span -> annotation; "[memory]" instants -> memory_event.
// 2. Attribute keys: the spellings the 1.0 analyses accepted are renamed to the canonical key
//    (core/attr_keys.h). Where a span carries several spellings of one fact, the one the 1.0 analyses
//    read first becomes the canonical key and is placed before the others, so values do not change.
//
// Spans that already carry a type (files written since 1.1, traces made by today's importers) are
// not touched. Counted in the stats load.activity_upgraded and load.legacy_keys_renamed (core/stats.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "trace/trace.h"

namespace strata::trace {

struct UpgradeCounts {
  uint64_t spans_typed = 0;   // spans given an activity type
  uint64_t keys_renamed = 0;  // attributes whose key was renamed to the canonical one
};

// Upgrades the spans [first, trace->spans.size()) whose activity type is unknown (0).
UpgradeCounts upgrade_untyped_spans(Trace* trace, size_t first = 0);

}  // namespace strata::trace
