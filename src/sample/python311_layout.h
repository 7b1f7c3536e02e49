/* CPython 3.11 structure offsets (python311_layout.c computes them from CPython's headers). */
#ifndef STRATA_SAMPLE_PYTHON311_LAYOUT_H_
#define STRATA_SAMPLE_PYTHON311_LAYOUT_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct strata_py311_layout {
  int version_major, version_minor;
  size_t runtime_interpreters_head, interp_threads_head;
  size_t tstate_next, tstate_native_thread_id, tstate_cframe;
  /* The thread's data stack: _PyInterpreterFrames of running functions live there, contiguously. */
  size_t tstate_datastack_chunk, tstate_datastack_top;
  size_t chunk_previous, chunk_size, chunk_top, chunk_data;
  /* The interpreter's thread-state key (pthread_getspecific gives a thread its own PyThreadState). */
  size_t runtime_tss_key, runtime_tss_initialized;
  size_t cframe_current_frame;
  size_t frame_code, frame_previous, frame_prev_instr, frame_is_entry, frame_owner, frame_size;
  int frame_owned_by_thread; /* `owner` of a frame in the data stack (not a generator's) */
  int frame_owned_by_generator;
  size_t object_type;
  size_t code_filename, code_name, code_qualname, code_linetable, code_firstlineno, code_adaptive;
  size_t unicode_length, unicode_state, unicode_ascii_data, unicode_compact_data;
  size_t bytes_size, bytes_data;
};
extern const struct strata_py311_layout strata_py311_layout;

#ifdef __cplusplus
}
#endif

#endif
