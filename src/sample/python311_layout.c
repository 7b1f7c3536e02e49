/* Offsets of the CPython 3.11 structures the sampler reads, taken from the interpreter's own
 * (internal) headers of the Python this project was built against: no hand-copied numbers. The
 * sampler checks at run time that the process runs a 3.11 (Py_Version) before using them. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>

#include "sample/python311_layout.h"

const struct strata_py311_layout strata_py311_layout = {
    .version_major = PY_MAJOR_VERSION,
    .version_minor = PY_MINOR_VERSION,
    .runtime_interpreters_head = offsetof(_PyRuntimeState, interpreters.head),
    .interp_threads_head = offsetof(PyInterpreterState, threads.head),
    .tstate_next = offsetof(PyThreadState, next),
    .tstate_native_thread_id = offsetof(PyThreadState, native_thread_id),
    .tstate_cframe = offsetof(PyThreadState, cframe),
    .tstate_datastack_chunk = offsetof(PyThreadState, datastack_chunk),
    .tstate_datastack_top = offsetof(PyThreadState, datastack_top),
    .chunk_previous = offsetof(_PyStackChunk, previous),
    .chunk_size = offsetof(_PyStackChunk, size),
    .chunk_top = offsetof(_PyStackChunk, top),
    .runtime_tss_key = offsetof(_PyRuntimeState, gilstate.autoTSSkey._key),
    .runtime_tss_initialized = offsetof(_PyRuntimeState, gilstate.autoTSSkey._is_initialized),
    .chunk_data = offsetof(_PyStackChunk, data),
    .cframe_current_frame = offsetof(_PyCFrame, current_frame),
    .frame_code = offsetof(_PyInterpreterFrame, f_code),
    .frame_previous = offsetof(_PyInterpreterFrame, previous),
    .frame_prev_instr = offsetof(_PyInterpreterFrame, prev_instr),
    .frame_is_entry = offsetof(_PyInterpreterFrame, is_entry),
    .frame_owner = offsetof(_PyInterpreterFrame, owner),
    .frame_size = sizeof(_PyInterpreterFrame),
    .frame_owned_by_thread = FRAME_OWNED_BY_THREAD,
    .frame_owned_by_generator = FRAME_OWNED_BY_GENERATOR,
    .object_type = offsetof(PyObject, ob_type),
    .code_filename = offsetof(PyCodeObject, co_filename),
    .code_name = offsetof(PyCodeObject, co_name),
    .code_qualname = offsetof(PyCodeObject, co_qualname),
    .code_linetable = offsetof(PyCodeObject, co_linetable),
    .code_firstlineno = offsetof(PyCodeObject, co_firstlineno),
    .code_adaptive = offsetof(PyCodeObject, co_code_adaptive),
    .unicode_length = offsetof(PyASCIIObject, length),
    .unicode_state = offsetof(PyASCIIObject, state),
    .unicode_ascii_data = sizeof(PyASCIIObject),
    .unicode_compact_data = sizeof(PyCompactUnicodeObject),
    .bytes_size = offsetof(PyVarObject, ob_size),
    .bytes_data = offsetof(PyBytesObject, ob_sval),
};
