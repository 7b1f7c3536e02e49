// The stats registry: one fixed list of every counter Strata keeps about a trace (what the collector
// lost, what the reader skipped, what an importer dropped or noted, how the span tree was linked),
// each with a severity, the part of Strata that counts it, and a description. In the manner of
// Perfetto's trace_processor stats table: a counter that is not in this list does not exist.
//
// Every stat is documented in docs/trace-format.md (a test checks it). Names are stable: they are
// what `strata info` prints and what scripts read. Where a stat is stored in trace files, `disk_key`
// is its key there; those keys are the ones older Strata versions wrote ("dropped.<cause>" in Stats
// chunks, "import.<what>" in Process chunks), so old files keep reading and old readers read new ones.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::stats {

enum class Severity : uint8_t {
  kInfo,      // what happened; nothing lost
  kDataLoss,  // correct operation that still lost data (a full buffer, a malformed foreign event)
  kError,     // a bug, misuse or damaged input (an end without a begin, an undefined string id)
};

enum class Source : uint8_t {
  kCollector,    // counted while recording (libstrata and the tracers it loads), written into the file
  kFormat,       // the chunk reader: damage found in the file's framing
  kLoader,       // the native reader: damage found inside chunks
  kImport,       // an importer of a foreign format (Kineto, ONNX Runtime, TensorFlow JSON, ...)
  kCorrelation,  // the span tree built when a trace is opened
};

// Where the value lives: per trace (computed when a trace is opened) or per process (written by
// that process's writer or importer).
enum class Scope : uint8_t { kTrace, kProcess };

// How the value is stored in a trace file.
enum class Disk : uint8_t {
  kNone,     // computed when loading; never saved
  kStats,    // a Stats chunk entry (`dropped.<cause>`): cumulative, the last chunk of a stream wins
  kProcess,  // a Process chunk property
  kRecord,   // a Record chunk property: counted by the command that wrote the file (strata record's merge)
};

// clang-format off
// F(id, name, disk, disk_key, scope, severity, source, description)
#define STRATA_STATS(F)                                                                                   \
  F(kCollectorBufferFull, "collector.buffer_full", kStats, "dropped.buffer_full", kProcess, kDataLoss,    \
    kCollector, "events not recorded: the per-thread buffer budget was spent (raise the buffer size)")   \
  F(kCollectorEndLost, "collector.end_lost", kStats, "dropped.end_lost", kProcess, kDataLoss, kCollector, \
    "span ends that could not be recorded; the span is kept, flagged unfinished")                        \
  F(kCollectorUnmatchedEnd, "collector.unmatched_end", kStats, "dropped.unmatched_end", kProcess, kError, \
    kCollector, "span ends with no open span on the thread (API misuse or a lost begin)")                \
  F(kCollectorAttrWithoutSpan, "collector.attr_without_span", kStats, "dropped.attr_without_span",        \
    kProcess, kError, kCollector, "attributes set while no span was open on the thread")                 \
  F(kCollectorStringTruncated, "collector.string_truncated", kStats, "dropped.string_truncated",          \
    kProcess, kDataLoss, kCollector, "strings longer than the event limit, cut (the event is kept)")     \
  F(kCollectorWriteFailed, "collector.write_failed", kStats, "dropped.write_failed", kProcess, kDataLoss, \
    kCollector, "events lost because the trace file could not be written")                               \
  F(kCollectorCorruptBuffer, "collector.corrupt_buffer", kStats, "dropped.corrupt_buffer", kProcess,      \
    kError, kCollector, "unreadable events in a thread buffer (a bug; the rest of that batch is lost)")  \
  F(kCollectorCuptiRecords, "collector.cupti_records", kStats, "dropped.cupti_records", kProcess,         \
    kDataLoss, kCollector, "activity records CUPTI itself reported as dropped")                          \
  F(kCollectorCuptiBufferAllocFailures, "collector.cupti_buffer_alloc_failures", kStats,                  \
    "dropped.cupti_buffer_alloc_failures", kProcess, kDataLoss, kCollector,                              \
    "CUPTI activity buffers that could not be allocated (their records are lost)")                       \
  F(kCollectorCuptiBufferWalkErrors, "collector.cupti_buffer_walk_errors", kStats,                        \
    "dropped.cupti_buffer_walk_errors", kProcess, kError, kCollector,                                    \
    "CUPTI activity buffers whose records could not be walked to the end")                               \
  F(kCollectorCuptiUnknownActivityKind, "collector.cupti_unknown_activity_kind", kStats,                  \
    "dropped.cupti_unknown_activity_kind", kProcess, kDataLoss, kCollector,                              \
    "CUPTI activity records of a kind this version does not translate")                                  \
  F(kCollectorCuptiBadTimestamps, "collector.cupti_bad_timestamps", kStats,                               \
    "dropped.cupti_bad_timestamps", kProcess, kDataLoss, kCollector,                                     \
    "CUPTI activity records whose end precedes their start or lies outside the clock range")            \
  F(kCollectorOnednnVerboseNoOperation, "collector.onednn_verbose_no_operation", kStats,                  \
    "dropped.onednn_verbose_no_operation", kProcess, kDataLoss, kCollector,                              \
    "oneDNN verbose lines with the marker and nothing recognizable after it")                            \
  F(kCollectorOnednnVerboseTooFewFields, "collector.onednn_verbose_too_few_fields", kStats,               \
    "dropped.onednn_verbose_too_few_fields", kProcess, kDataLoss, kCollector,                            \
    "oneDNN exec lines with fewer fields than an execution has")                                         \
  F(kCollectorOnednnVerboseBadTimestamp, "collector.onednn_verbose_bad_timestamp", kStats,                \
    "dropped.onednn_verbose_bad_timestamp", kProcess, kDataLoss, kCollector,                             \
    "oneDNN exec lines whose timestamp field is not a decimal number")                                   \
  F(kCollectorOnednnVerboseBadDuration, "collector.onednn_verbose_bad_duration", kStats,                  \
    "dropped.onednn_verbose_bad_duration", kProcess, kDataLoss, kCollector,                              \
    "oneDNN exec lines whose duration is not a finite, non-negative number of ms")                       \
  F(kCollectorOnednnVerboseEmptyPrimitive, "collector.onednn_verbose_empty_primitive", kStats,            \
    "dropped.onednn_verbose_empty_primitive", kProcess, kDataLoss, kCollector,                           \
    "oneDNN exec lines with an empty primitive kind")                                                    \
  F(kCollectorPcSamplingHwDroppedSamples, "collector.pc_sampling_hw_dropped_samples", kStats,             \
    "dropped.pc_sampling_hw_dropped_samples", kProcess, kDataLoss, kCollector,                           \
    "GPU PC samples the hardware dropped (backpressure/overflow; CUPTI droppedSamples)")                 \
  F(kCollectorPcSamplingHwBufferFull, "collector.pc_sampling_hw_buffer_full", kStats,                     \
    "dropped.pc_sampling_hw_buffer_full", kProcess, kDataLoss, kCollector,                               \
    "GPU PC sampling collections that found the hardware buffer full (their PC data is lost)")          \
  F(kCollectorPcSamplingGetDataErrors, "collector.pc_sampling_get_data_errors", kStats,                   \
    "dropped.pc_sampling_get_data_errors", kProcess, kDataLoss, kCollector,                              \
    "GPU PC sampling collections that failed (cuptiPCSamplingGetData error; that batch is lost)")       \
  F(kCollectorPcSamplingBadRecords, "collector.pc_sampling_bad_records", kStats,                          \
    "dropped.pc_sampling_bad_records", kProcess, kError, kCollector,                                     \
    "GPU PC records or stall entries outside the buffer or naming an unknown stall reason: skipped")    \
  F(kCollectorPcSamplingCubinsOverCap, "collector.pc_sampling_cubins_over_cap", kStats,                   \
    "dropped.pc_sampling_cubins_over_cap", kProcess, kDataLoss, kCollector,                              \
    "CUDA modules not kept for source lines (the cubin budget was spent): their PCs have no line")      \
  F(kCollectorSampleRingOverflow, "collector.sample_ring_overflow", kStats,                              \
    "dropped.sample_ring_overflow", kProcess, kDataLoss, kCollector,                                     \
    "CPU samples lost: the kernel ring buffer was full (PERF_RECORD_LOST)")                              \
  F(kCollectorSampleThrottled, "collector.sample_throttled", kStats,                                     \
    "dropped.sample_throttled", kProcess, kDataLoss, kCollector,                                         \
    "CPU samples not taken: the kernel throttled sampling (estimated)")                                  \
  F(kCollectorSampleUnwindFailed, "collector.sample_unwind_failed", kStats,                              \
    "dropped.sample_unwind_failed", kProcess, kDataLoss, kCollector,                                     \
    "CPU samples whose DWARF unwinding stopped early: kept with the frames found")                       \
  F(kCollectorSampleEvictionOverflow, "collector.sample_eviction_overflow", kStats,                      \
    "dropped.sample_eviction_overflow", kProcess, kDataLoss, kCollector,                                 \
    "CPU sample counts evicted from a full table that could not be written")                             \
  F(kCollectorSampleSignalBufferFull, "collector.sample_signal_buffer_full", kStats,                     \
    "dropped.sample_signal_buffer_full", kProcess, kDataLoss, kCollector,                                \
    "CPU samples lost in fallback mode: the thread's sample buffer was full")                            \
  F(kCollectorSampleNoThreadBuffer, "collector.sample_no_thread_buffer", kStats,                         \
    "dropped.sample_no_thread_buffer", kProcess, kDataLoss, kCollector,                                  \
    "CPU samples lost in fallback mode: a signal on a thread not set up yet")                            \
  F(kCollectorSamplePythonStack, "collector.sample_python_stack", kStats,                                \
    "dropped.sample_python_stack", kProcess, kDataLoss, kCollector,                                      \
    "CPU samples whose Python stack could not be read: kept with their native frames")                   \
  F(kCollectorSampleBadRecord, "collector.sample_bad_record", kStats,                                    \
    "dropped.sample_bad_record", kProcess, kError, kCollector,                                           \
    "malformed kernel sample records: skipped")                                                          \
  F(kCollectorSamplePythonRecord, "collector.sample_python_record", kStats,                             \
    "dropped.sample_python_record", kProcess, kDataLoss, kCollector,                                    \
    "CPU samples with no Python stack record from their thread's SIGTRAP handler (ring full, no "       \
    "ring, signal not delivered): kept with their native frames")                                       \
  F(kSampleCollectorCpuNs, "sample.collector_cpu_ns", kProcess, "collector.sample.collector_cpu_ns",    \
    kProcess, kInfo, kCollector,                                                                         \
    "CPU time (ns) of the CPU sampler's own work: its sampling thread, read when it stops, plus the "     \
    "writer thread's time in the sampler's plugin (the kernel's per-sample work is not in it)")           \
  F(kSampleSamplesTaken, "sample.samples_taken", kProcess, "collector.sample.samples_taken", kProcess,   \
    kInfo, kCollector, "CPU samples the sampling thread received from the kernel or its timer")          \
  F(kSampleStacksCutUnmapped, "sample.stacks_cut_unmapped", kProcess,                                   \
    "collector.sample.stacks_cut_unmapped", kProcess, kInfo, kCollector,                                \
    "CPU samples whose native stack ends at a caller address in no mapping (a frame-pointer walk "       \
    "through code without frame pointers): the frames from there on are left out")                       \
  F(kSampleJitFramesNamed, "sample.jit_frames_named", kProcess, "collector.sample.jit_frames_named",     \
    kProcess, kInfo, kCollector,                                                                         \
    "frames in generated code (anonymous executable memory) named from the process's perf map "          \
    "(/tmp/perf-PID.map, e.g. oneDNN's JIT kernels)")                                                    \
  F(kSampleJitMapsRefused, "sample.jit_maps_refused", kProcess, "collector.sample.jit_maps_refused",     \
    kProcess, kDataLoss, kCollector,                                                                     \
    "perf maps `record --sample` did not let oneDNN open: /tmp/perf-PID.map existed, not created by "    \
    "strata (a file or link another user may have planted); JIT code is not named in that process")     \
  F(kSampleFilesRefused, "sample.files_refused", kProcess, "collector.sample.files_refused", kProcess,   \
    kInfo, kCollector,                                                                                   \
    "files the sampled process's mappings or perf map name that were refused unopened (not a regular "  \
    "file, e.g. a FIFO put where a library was, or over the size limit): their frames stay "            \
    "module+offset")                                                                                     \
  F(kSamplePythonReaderMoved, "sample.python_reader_moved", kProcess,                                \
    "collector.sample.python_reader_moved", kProcess, kInfo, kCollector,                                \
    "1 when the program installed its own SIGTRAP handler while its threads read their Python "         \
    "stacks: from then on the sampling thread read them (the program's SIGTRAPs all its own)")          \
  F(kSamplePythonReads, "sample.python_reads", kProcess,                                                \
    "collector.sample.python_reads", kProcess, kInfo, kCollector,                                       \
    "process_vm_readv calls the sampling thread made to read Python stacks and code objects")           \
  F(kSamplePythonFramesFromChunks, "sample.python_frames_from_chunks", kProcess,                        \
    "collector.sample.python_frames_from_chunks", kProcess, kInfo, kCollector,                          \
    "Python frames the sampling thread took from a copied data-stack chunk")                            \
  F(kSamplePythonFramesReadSingly, "sample.python_frames_read_singly", kProcess,                        \
    "collector.sample.python_frames_read_singly", kProcess, kInfo, kCollector,                          \
    "Python frames the sampling thread read one by one (generators, frames outside the copied "         \
    "chunks)")                                                                                          \
  F(kSamplePythonSpeculativeHits, "sample.python_speculative_hits", kProcess,                           \
    "collector.sample.python_speculative_hits", kProcess, kInfo, kCollector,                            \
    "Python stacks the sampling thread read in one call, speculating on the last sample's frame "       \
    "and chunk")                                                                                        \
  F(kSamplePythonCodeObjects, "sample.python_code_objects", kProcess,                                   \
    "collector.sample.python_code_objects", kProcess, kInfo, kCollector,                                \
    "distinct Python code objects named (their name, file and line table read)")                        \
  F(kSamplePythonCodesFreed, "sample.python_codes_freed", kProcess,                                     \
    "collector.sample.python_codes_freed", kProcess, kInfo, kCollector,                                 \
    "in-thread Python frames whose code object was freed before the sampling thread named it "          \
    "(shown as [code freed before it was named])")                                                      \
  F(kSamplePythonStringsMalformed, "sample.python_strings_malformed", kProcess,                          \
    "collector.sample.python_strings_malformed", kProcess, kInfo, kCollector,                           \
    "Python names or file names refused as not text (the object changed while it was read): the "      \
    "frame is named <unknown>")                                                                         \
  F(kSamplePythonRecords, "sample.python_records", kProcess,                                            \
    "collector.sample.python_records", kProcess, kInfo, kCollector,                                     \
    "Python stacks the sampled threads' SIGTRAP handler recorded (in-thread reads)")                    \
  F(kSamplePythonRecordsPaired, "sample.python_records_paired", kProcess,                               \
    "collector.sample.python_records_paired", kProcess, kInfo, kCollector,                              \
    "CPU samples that took their thread's handler record (with collector.sample_python_record: "        \
    "every sample of in-thread reads)")                                                                 \
  F(kSamplePythonRecordsUnpaired, "sample.python_records_unpaired", kProcess,                           \
    "collector.sample.python_records_unpaired", kProcess, kInfo, kCollector,                            \
    "handler records no CPU sample claimed (their sample was lost, or the record came too late)")       \
  F(kSamplePythonRecordsShared, "sample.python_records_shared", kProcess,                               \
    "collector.sample.python_records_shared", kProcess, kInfo, kCollector,                              \
    "CPU samples taken in the kernel that took a handler record an earlier sample of the same stay in "  \
    "the kernel took too (the signals coalesced; the Python stack cannot have changed)")                 \
  F(kSamplePythonRecordRingFull, "sample.python_record_ring_full", kProcess,                            \
    "collector.sample.python_record_ring_full", kProcess, kInfo, kCollector,                            \
    "handler records not written: the thread's record ring was full (their samples count as "           \
    "collector.sample_python_record)")                                                                  \
  F(kSamplePythonRecordNoRing, "sample.python_record_no_ring", kProcess,                                \
    "collector.sample.python_record_no_ring", kProcess, kInfo, kCollector,                              \
    "handler records not written: more threads than record rings (their samples count as "              \
    "collector.sample_python_record)")                                                                  \
  F(kSamplePythonTopFramesPopped, "sample.python_top_frames_popped", kProcess,                          \
    "collector.sample.python_top_frames_popped", kProcess, kInfo, kCollector,                           \
    "in-thread reads that left out a top Python frame being popped (its caller kept)")                  \
  F(kSamplePythonStacksTruncated, "sample.python_stacks_truncated", kProcess,                           \
    "collector.sample.python_stacks_truncated", kProcess, kInfo, kCollector,                            \
    "Python stacks deeper than the handler's bound (256 frames): the outer frames are left out")        \
  F(kSamplePythonSafeReads, "sample.python_safe_reads", kProcess,                                       \
    "collector.sample.python_safe_reads", kProcess, kInfo, kCollector,                                  \
    "top Python frames outside the data stack (generators) the handler read with process_vm_readv")     \
  F(kSamplePythonForeignSigtraps, "sample.python_foreign_sigtraps", kProcess,                           \
    "collector.sample.python_foreign_sigtraps", kProcess, kInfo, kCollector,                            \
    "SIGTRAPs that were not the sampler's: handed to the program's previous disposition")               \
  F(kSamplePythonSamplesDeferred, "sample.python_samples_deferred", kProcess,                           \
    "collector.sample.python_samples_deferred", kProcess, kInfo, kCollector,                            \
    "CPU samples that waited for the next drain of the handler records")                                \
  F(kSampleHandlerNs, "sample.handler_ns", kProcess, "collector.sample.handler_ns", kProcess, kInfo,     \
    kCollector,                                                                                          \
    "time (ns) the sampled threads spent in the SIGTRAP handler that reads their Python stacks, "        \
    "timed by the handler from its entry to its return (signal delivery and return not in it)")          \
  F(kSampleHandlerCalls, "sample.handler_calls", kProcess, "collector.sample.handler_calls", kProcess,   \
    kInfo, kCollector, "SIGTRAP handler calls for the sampler's samples (sample.handler_ns is their sum)") \
  F(kLoadFiles, "load.files", kNone, "", kTrace, kInfo, kLoader, "files read into the trace")            \
  F(kLoadBytes, "load.bytes", kNone, "", kTrace, kInfo, kLoader, "bytes of the files read")              \
  F(kLoadCorruptChunks, "load.corrupt_chunks", kNone, "", kTrace, kDataLoss, kFormat,                    \
    "chunks whose payload checksum failed: dropped whole")                                               \
  F(kLoadSkippedBytes, "load.skipped_bytes", kNone, "", kTrace, kDataLoss, kFormat,                      \
    "bytes skipped while resynchronizing after a damaged chunk header")                                  \
  F(kLoadTruncatedFiles, "load.truncated_files", kNone, "", kTrace, kDataLoss, kFormat,                  \
    "files whose last chunk is cut short (a killed writer, a full disk): everything before it loaded")  \
  F(kLoadUnknownChunks, "load.unknown_chunks", kNone, "", kTrace, kInfo, kFormat,                        \
    "chunks of a type this version does not know (a newer minor version): skipped on purpose")           \
  F(kLoadUndecodableChunks, "load.undecodable_chunks", kNone, "", kTrace, kDataLoss, kLoader,            \
    "chunks with a valid checksum whose payload could not be decoded: skipped (a warning says why)")    \
  F(kLoadBadStringIds, "load.bad_string_ids", kNone, "", kTrace, kDataLoss, kLoader,                     \
    "string table entries with an id beyond what a stream can hold: skipped")                            \
  F(kLoadUnknownStrings, "load.unknown_strings", kNone, "", kTrace, kError, kLoader,                     \
    "string ids referenced but never defined (shown as <unknown string N>)")                             \
  F(kLoadUnknownLevels, "load.unknown_levels", kNone, "", kTrace, kInfo, kLoader,                        \
    "spans with a level this version does not know (kept, shown as level(N))")                           \
  F(kLoadUnknownActivities, "load.unknown_activities", kNone, "", kTrace, kInfo, kLoader,                \
    "spans with an activity type this version does not know (kept, shown as activity(N))")               \
  F(kLoadActivityUpgraded, "load.activity_upgraded", kNone, "", kTrace, kInfo, kLoader,                  \
    "spans of format 1.0 files given an activity type at load (trace/activity_upgrade.h)")               \
  F(kLoadLegacyKeysRenamed, "load.legacy_keys_renamed", kNone, "", kTrace, kInfo, kLoader,               \
    "attributes of format 1.0 files whose key was renamed to the canonical one (core/attr_keys.h)")      \
  F(kLoadClampedTimes, "load.clamped_times", kNone, "", kTrace, kError, kLoader,                         \
    "spans with a time beyond +-2^62 ns (corrupt or forged): kept, moved to that bound")                 \
  F(kLoadStreamLimitChunks, "load.stream_limit_chunks", kNone, "", kTrace, kError, kLoader,              \
    "chunks of streams past the 65,536 (processes) a trace holds: skipped")                               \
  F(kLoadDuplicateProcessChunks, "load.duplicate_process_chunks", kNone, "", kTrace, kError, kLoader,    \
    "second Process chunks for one stream (a forged or copied part claiming it): ignored, the first stands")\
  F(kMergeForeignStreamChunks, "merge.foreign_stream_chunks", kRecord, "merge.foreign_stream_chunks",     \
    kTrace, kError, kFormat,                                                                             \
    "chunks of a stream another merged part already wrote (a forged or copied part): left out of the merge")\
  F(kLoadBadCounters, "load.bad_counters", kNone, "", kTrace, kError, kLoader,                           \
    "stored counters that are not event counts (negative, above 2^48 or not integers): ignored")         \
  F(kLoadDirectoryEntriesSkipped, "load.directory_entries_skipped", kNone, "", kTrace, kError, kLoader,   \
    "entries of a trace directory not read: links, non-regular files, other users' files")              \
  F(kImportEventsRead, "import.events_read", kProcess, "import.events_read", kProcess, kInfo, kImport,   \
    "events in the foreign file's event array")                                                          \
  F(kImportSpansWritten, "import.spans_written", kProcess, "import.spans_written", kProcess, kInfo,     \
    kImport, "records made from them (spans, instants, counter samples)")                                \
  F(kImportMetadataEvents, "import.metadata_events", kProcess, "import.metadata_events", kProcess, kInfo,\
    kImport, "metadata events (process and thread names) consumed, not spans")                          \
  F(kImportFlowEvents, "import.flow_events", kProcess, "import.flow_events", kProcess, kInfo, kImport,  \
    "flow events bound to their slices: consumed as links, not spans")                                   \
  F(kImportEndEvents, "import.end_events", kProcess, "import.end_events", kProcess, kInfo, kImport,     \
    "E events that closed a B event (the pair is one span, counted at its B)")                           \
  F(kImportCounterEvents, "import.counter_events", kProcess, "import.counter_events", kProcess, kInfo,   \
    kImport, "counter events (ph C) imported ...")                                                       \
  F(kImportCounterSamples, "import.counter_samples", kProcess, "import.counter_samples", kProcess,       \
    kInfo, kImport, "... as this many counter records, one per numeric series")                          \
  F(kImportUnfinishedSpans, "import.unfinished_spans", kProcess, "import.unfinished_spans", kProcess,   \
    kInfo, kImport, "B events without a usable E: kept, flagged unfinished, ended at the last time seen")\
  F(kImportLateRecordsReordered, "import.late_records_reordered", kProcess,                               \
    "import.late_records_reordered", kProcess, kInfo, kImport,                                           \
    "events stored after a later-starting one (device activity flushed late): reordered by time")        \
  F(kImportDeviceSpansWithoutLaunch, "import.device_spans_without_launch", kProcess,                     \
    "import.device_spans_without_launch", kProcess, kInfo, kImport,                                      \
    "device work whose launching process is unknown (no runtime call with its correlation id)")          \
  F(kImportRuntimeCallsLinkedAsLaunch, "import.runtime_calls_linked_as_launch", kProcess,                \
    "import.runtime_calls_linked_as_launch", kProcess, kInfo, kImport,                                   \
    "runtime calls that device work correlates to, made launches whatever their name")                   \
  F(kImportHostEventsOfPidZero, "import.host_events_of_pid_0", kProcess, "import.host_events_of_pid_0",  \
    kProcess, kInfo, kImport,                                                                            \
    "host events (Python functions, ops) on pid 0, which no process has: shown on the main process")     \
  F(kImportCounterNonNumericSeries, "import.counter_non_numeric_series", kProcess,                       \
    "import.counter_non_numeric_series", kProcess, kInfo, kImport,                                       \
    "non-numeric values in counter events' args (the numeric series are kept)")                          \
  F(kImportEndNameMismatch, "import.end_name_mismatch", kProcess, "import.end_name_mismatch", kProcess, \
    kInfo, kImport, "E events whose name differs from their B event's (closed anyway, Chrome semantics)")\
  F(kImportNcuKernels, "import.ncu.kernels", kProcess, "import.ncu.kernels", kProcess, kInfo, kImport,   \
    "kernels read from Nsight Compute CSV (one span each)")                                              \
  F(kImportNcuMetricRows, "import.ncu.metric_rows", kProcess, "import.ncu.metric_rows", kProcess, kInfo,  \
    kImport, "Nsight Compute metric values read (details rows, or raw-page cells), one attribute each")   \
  F(kImportNcuRuleRows, "import.ncu.rule_rows", kProcess, "import.ncu.rule_rows", kProcess, kInfo,        \
    kImport, "Nsight Compute details rows carrying a rule, not a metric (kept as rule.<name> attributes)")\
  F(kImportNcuOtherLines, "import.ncu.other_lines", kProcess, "import.ncu.other_lines", kProcess, kInfo,  \
    kImport, "lines of an ncu CSV that are no table rows (==PROF== lines, the program's output)")        \
  F(kImportNcuJoinMatched, "import.ncu_join.matched", kProcess, "import.ncu_join.matched", kProcess,      \
    kInfo, kImport, "trace kernels given measured ncu metrics (by kernel name and launch order)")        \
  F(kImportNcuJoinUnmatched, "import.ncu_join.ncu_unmatched", kProcess, "import.ncu_join.ncu_unmatched",  \
    kProcess, kDataLoss, kImport, "ncu kernels with no trace kernel of that name and launch ordinal")    \
  F(kImportNcuJoinTraceKernelsWithout, "import.ncu_join.trace_kernels_without_metrics", kProcess,        \
    "import.ncu_join.trace_kernels_without_metrics", kProcess, kInfo, kImport,                           \
    "trace kernels no ncu kernel matched (ncu profiled a subset)")                                       \
  F(kImportKernelsOfExtensibleLaunches, "import.kernels_of_extensible_launches", kProcess,               \
    "import.kernels_of_extensible_launches", kProcess, kInfo, kImport,                                   \
    "kernels launched by cuLaunchKernelEx/cudaLaunchKernelExC (cluster-capable launches): "              \
    "attribute launch_api")                                                                              \
  F(kImportNsysOsrtUntyped, "import.nsys.osrt_untyped_calls", kProcess,                                  \
    "import.nsys.osrt_untyped_calls", kProcess, kInfo, kImport,                                          \
    "OS runtime calls (nsys OSRT_API): application spans with no activity type of their own "            \
    "(unknown)")                                                                                         \
  F(kImportNsysUnknownSchema, "import.nsys.unknown_schema_version", kProcess,                            \
    "import.nsys.unknown_schema_version", kProcess, kDataLoss, kImport,                                  \
    "an nsys export whose schema major version is newer than 3: the known tables and columns "           \
    "imported, a warning printed once")                                                                  \
  F(kImportNsysNvtxModelRanges, "import.nsys.nvtx_model_ranges", kProcess,                               \
    "import.nsys.nvtx_model_ranges", kProcess, kInfo, kImport,                                           \
    "NVTX ranges placed at the model level: step-named ranges, their enclosing ranges, or a "            \
    "thread's one all-enclosing range")                                                                  \
  F(kImportNsysNvtxLayerRanges, "import.nsys.nvtx_layer_ranges", kProcess,                               \
    "import.nsys.nvtx_layer_ranges", kProcess, kInfo, kImport,                                           \
    "NVTX ranges placed at the layer level (every range the model rule does not take)")                  \
  F(kImportMemoryEventsWithoutBytes, "import.memory.events_without_bytes", kProcess,                   \
    "import.memory.events_without_bytes", kProcess, kDataLoss, kImport,                                  \
    "[memory] events without a Bytes value: not counted in any op's alloc_bytes")                        \
  F(kImportMemoryAllocationsInOps, "import.memory.allocations_in_ops", kProcess,                         \
    "import.memory.allocations_in_ops", kProcess, kInfo, kImport,                                        \
    "[memory] allocations made while an op ran on their thread: added to its alloc_bytes")               \
  F(kImportMemoryAllocationsOutsideOps, "import.memory.allocations_outside_ops", kProcess,               \
    "import.memory.allocations_outside_ops", kProcess, kInfo, kImport,                                   \
    "[memory] allocations made while no op ran on their thread")                                         \
  F(kImportMemoryTimelineSamples, "import.memory.timeline_samples", kProcess,                          \
    "import.memory.timeline_samples", kProcess, kInfo, kImport,                                          \
    "memory-timeline counter samples made from [memory] events' Total Allocated (in counter_samples)")   \
  F(kImportMemoryFrees, "import.memory.frees", kProcess, "import.memory.frees", kProcess, kInfo, kImport,\
    "[memory] frees (negative Bytes): not allocations")                                                  \
  F(kImportFlowsAc2gBound, "import.flows.ac2g_bound", kProcess, "import.flows.ac2g_bound", kProcess,    \
    kInfo, kImport, "launch-to-device flow events (cat ac2g) bound to their slices")                     \
  F(kImportFlowsFwdbwdBound, "import.flows.fwdbwd_bound", kProcess, "import.flows.fwdbwd_bound",        \
    kProcess, kInfo, kImport, "forward-to-backward flow events (cat fwdbwd) bound to their slices")      \
  F(kImportFlowsCorrelationFilled, "import.flows.correlation_filled", kProcess,                          \
    "import.flows.correlation_filled", kProcess, kInfo, kImport,                                         \
    "slices without a correlation id given the id of their ac2g flow event")                  \
  F(kImportFlowsCorrelationDisagreeing, "import.flows.correlation_disagreeing", kProcess,                \
    "import.flows.correlation_disagreeing", kProcess, kInfo, kImport,                                    \
    "slices whose correlation id differs from their ac2g flow event's id (their own is kept)")                          \
  F(kImportMalformedEvent, "import.malformed_event", kStats, "dropped.import.malformed_event", kProcess, \
    kDataLoss, kImport, "events that are not JSON objects")                                              \
  F(kImportMissingPhase, "import.missing_phase", kStats, "dropped.import.missing_phase", kProcess,       \
    kDataLoss, kImport, "events without a ph field")                                                     \
  F(kImportUnsupportedPhase, "import.unsupported_phase", kStats, "dropped.import.unsupported_phase",    \
    kProcess, kDataLoss, kImport, "events of a phase this importer does not import (async, object, ...)")\
  F(kImportMissingTs, "import.missing_ts", kStats, "dropped.import.missing_ts", kProcess, kDataLoss,    \
    kImport, "events without a ts field")                                                                \
  F(kImportMalformedTs, "import.malformed_ts", kStats, "dropped.import.malformed_ts", kProcess,          \
    kDataLoss, kImport, "events whose ts is not a number")                                               \
  F(kImportMissingDur, "import.missing_dur", kStats, "dropped.import.missing_dur", kProcess, kDataLoss,  \
    kImport, "complete events (ph X) without a dur field")                                               \
  F(kImportMalformedDur, "import.malformed_dur", kStats, "dropped.import.malformed_dur", kProcess,       \
    kDataLoss, kImport, "complete events whose dur is not a number")                                     \
  F(kImportNegativeDuration, "import.negative_duration", kStats, "dropped.import.negative_duration",    \
    kProcess, kDataLoss, kImport, "events with a negative dur")                                          \
  F(kImportTimeOverflow, "import.time_overflow", kStats, "dropped.import.time_overflow", kProcess,      \
    kDataLoss, kImport, "events whose ts + dur exceeds the representable time range")                    \
  F(kImportCounterWithoutValues, "import.counter_without_values", kStats,                                \
    "dropped.import.counter_without_values", kProcess, kDataLoss, kImport,                               \
    "counter events without a numeric value in args")                                                    \
  F(kImportUnmatchedEnd, "import.unmatched_end", kStats, "dropped.import.unmatched_end", kProcess,      \
    kDataLoss, kImport, "E events without an open B event on their pid/tid")                             \
  F(kImportEndOfDroppedBegin, "import.end_of_dropped_begin", kStats,                                    \
    "dropped.import.end_of_dropped_begin", kProcess, kDataLoss, kImport,                                 \
    "E events closing a B event that was itself dropped")                                                \
  F(kImportEndBeforeBegin, "import.end_before_begin", kStats, "dropped.import.end_before_begin",        \
    kProcess, kDataLoss, kImport, "E events earlier than their B event (the B is kept, unfinished)")    \
  F(kImportMalformedFlow, "import.malformed_flow", kStats, "dropped.import.malformed_flow", kProcess,    \
    kDataLoss, kImport, "flow events without a usable id or ts")                                         \
  F(kImportUnboundFlow, "import.unbound_flow", kStats, "dropped.import.unbound_flow", kProcess,         \
    kDataLoss, kImport, "flow events with no slice on their track to bind to")                           \
  F(kImportFenceMarker, "import.fence_marker", kStats, "dropped.import.fence_marker", kProcess,          \
    kDataLoss, kImport, "ONNX Runtime fence markers (no work of their own)")           \
  F(kImportTensorObjectEvent, "import.tensor_object_event", kStats,                                     \
    "dropped.import.tensor_object_event", kProcess, kDataLoss, kImport,                                  \
    "TensorFlow tensor object events (ph N, O, D): objects, not operations")                              \
  F(kImportDataflowEvent, "import.dataflow_event", kStats, "dropped.import.dataflow_event", kProcess,   \
    kDataLoss, kImport, "TensorFlow dataflow arrows (ph s, t, f): not imported")                               \
  F(kImportStreamAllDuplicate, "import.stream_all_duplicate", kStats,                                   \
    "dropped.import.stream_all_duplicate", kProcess, kDataLoss, kImport,                                 \
    "TensorFlow 'stream:all' copies of events already on their own stream")                              \
  F(kImportNonOpTrackEvent, "import.non_op_track_event", kStats, "dropped.import.non_op_track_event",   \
    kProcess, kDataLoss, kImport, "TensorFlow events on tensor or allocator tracks (no operations)")                \
  F(kImportAttributeLimit, "import.attribute_limit", kStats, "dropped.import.attribute_limit", kProcess,\
    kDataLoss, kImport, "arguments beyond the 65,535 attributes a span can hold (attributes, not events)")\
  F(kTreeExplicitLinks, "tree.explicit_links", kNone, "", kTrace, kInfo, kCorrelation,                   \
    "parents given by the span's own parent id")                                                         \
  F(kTreeMissingParents, "tree.missing_parents", kNone, "", kTrace, kInfo, kCorrelation,                 \
    "parent ids naming no span of the process: a remote (W3C) parent in another process, or lost")      \
  F(kTreeCorrelationLinks, "tree.correlation_links", kNone, "", kTrace, kInfo, kCorrelation,             \
    "device work linked to its runtime call (launch, sync) by correlation id")                           \
  F(kTreeExternalLinks, "tree.external_links", kNone, "", kTrace, kInfo, kCorrelation,                   \
    "spans linked to the framework op carrying the same external correlation id")                        \
  F(kTreeExternalRejected, "tree.external_rejected", kNone, "", kTrace, kInfo, kCorrelation,             \
    "external ids naming an op that was not running at the time (stale id reuse): ignored")             \
  F(kTreeReconstructed, "tree.reconstructed", kNone, "", kTrace, kInfo, kCorrelation,                    \
    "parents found by containment (same track or across threads)")                                      \
  F(kTreeCrossThread, "tree.cross_thread", kNone, "", kTrace, kInfo, kCorrelation,                       \
    "... of which on another thread of the process")                                                     \
  F(kTreeAmbiguous, "tree.ambiguous", kNone, "", kTrace, kInfo, kCorrelation,                            \
    "spans with several overlapping candidate parents on different threads (parallel work): latest taken")\
  F(kTreeLateRecords, "tree.late_records", kNone, "", kTrace, kInfo, kCorrelation,                       \
    "spans stored after a later-starting span of their track (reordered by their own timestamps)")      \
  F(kTreeCyclesBroken, "tree.cycles_broken", kNone, "", kTrace, kError, kCorrelation,                    \
    "explicit parent ids forming a cycle (corrupt input): the closing link dropped")                     \
  F(kTreeRoots, "tree.roots", kNone, "", kTrace, kInfo, kCorrelation, "spans without a parent")
// clang-format on

#define STRATA_STAT_ENUM(id, ...) id,
enum class Stat : uint16_t { STRATA_STATS(STRATA_STAT_ENUM) kCount };
#undef STRATA_STAT_ENUM

inline constexpr size_t kStatCount = static_cast<size_t>(Stat::kCount);

struct StatInfo {
  Stat id;
  std::string_view name;
  Disk disk;
  std::string_view disk_key;
  Scope scope;
  Severity severity;
  Source source;
  std::string_view description;
};

std::span<const StatInfo> all_stats();
const StatInfo& info(Stat stat);
// By name ("collector.buffer_full") or on-disk key ("dropped.buffer_full"); nullopt when unknown.
std::optional<Stat> find(std::string_view name_or_disk_key);
// Drops whose event is not lost: collector.end_lost (the span is kept, marked unfinished, and counted
// among the spans), collector.string_truncated (the event is kept with its string cut) and
// collector.sample_unwind_failed / sample_python_stack (the sample is kept with the frames found). A total of
// lost events leaves them out, or a span whose end was lost counts once as a span and once as lost.
bool keeps_event(Stat stat);
std::string_view severity_name(Severity severity);  // "info", "data-loss", "error"
std::string_view source_name(Source source);        // "collector", "format", ...

// Counter values for one scope (a trace or a process). Stats the registry does not know (written
// by a newer Strata, or a collector that names a cause not registered yet) are kept by their
// on-disk key, so nothing read is lost, and shown as unregistered.
class StatSet {
 public:
  void add(Stat stat, uint64_t n = 1);
  void set(Stat stat, uint64_t value);
  uint64_t get(Stat stat) const;
  // By registered name or on-disk key; unregistered keys answer their kept value.
  uint64_t get(std::string_view name_or_disk_key) const;
  void add_unregistered(const std::string& disk_key, uint64_t n);
  void set_unregistered(const std::string& disk_key, uint64_t value) { unregistered_[disk_key] = value; }
  void merge(const StatSet& other);
  // Non-zero registered values, in registry order.
  std::vector<std::pair<Stat, uint64_t>> nonzero() const;
  const std::map<std::string, uint64_t>& unregistered() const { return unregistered_; }
  bool empty() const;

 private:
  std::vector<std::pair<Stat, uint64_t>> values_;  // sorted by stat, no duplicates
  std::map<std::string, uint64_t> unregistered_;
};

}  // namespace strata::stats
