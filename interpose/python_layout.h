// python_layout.h: where CPython keeps what a stack walk reads, per interpreter version.
//
// gapwatch reads the Python stack of the thread inside a blocking CUDA call without calling the
// interpreter (python_stack.h), so it needs the byte offsets of a handful of fields of
// CPython's private structs. They differ between minor versions and are not published before
// 3.13 (3.13+ also put them in _PyRuntime's _Py_DebugOffsets for out-of-process tools: the 3.13
// entry here is used only where the running interpreter's agree with it, python_debug_offsets.h). The table is generated from each version's own headers by
// scripts/gen-python-layouts.sh (offsetof against the installed internal headers; the command is
// in docs/design/python-stacks.md) and is data, not code: python_layouts.inc.
//
// Offsets are bytes from the start of the struct; -1 means the version has no such field.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace gapwatch {

struct PythonLayout {
  int minor;  // the layout of CPython 3.<minor> (x86-64, 64-bit, default build, not free-threaded)

  // _PyRuntimeState: the Py_tss_t whose pthread key holds each thread's own PyThreadState
  // (gilstate.autoTSSkey before 3.12, autoTSSkey after), and the main interpreter.
  int32_t runtime_tss;            // offset of the Py_tss_t in _PyRuntime
  int32_t tss_initialized;        // offsetof(Py_tss_t, _is_initialized) (an int)
  int32_t tss_key;                // offsetof(Py_tss_t, _key) (a pthread_key_t)
  int32_t runtime_main_interp;    // interpreters.main (PyInterpreterState*)

  // PyThreadState.
  int32_t tstate_interp;          // PyInterpreterState*
  int32_t tstate_thread_id;       // unsigned long: pthread_self() of the thread it belongs to
  // 3.10: PyFrameObject* frame; 3.11, 3.12: _PyCFrame* cframe; 3.13+: _PyInterpreterFrame* current_frame.
  int32_t tstate_frame;
  int32_t cframe_current_frame;   // 3.11, 3.12: offsetof(_PyCFrame, current_frame); -1 otherwise

  // The frame: PyFrameObject (3.10) or _PyInterpreterFrame (3.11+).
  int32_t frame_previous;         // f_back (3.10) or previous
  int32_t frame_code;             // f_code (3.10-3.12) or f_executable (3.13+)
  // 3.10: int f_lasti (index of the last instruction in code units); 3.11, 3.12: prev_instr;
  // 3.13+: instr_ptr (_Py_CODEUNIT*).
  int32_t frame_instr;
  int32_t frame_owner;            // char owner (3.11+); -1 in 3.10
  int32_t frame_state;            // signed char f_state (3.10); -1 otherwise

  // PyCodeObject.
  int32_t code_filename;          // PyObject* (str)
  int32_t code_name;              // PyObject* (str)
  int32_t code_qualname;          // PyObject* (str), 3.11+; -1 in 3.10
  int32_t code_firstlineno;       // int
  int32_t code_linetable;         // PyObject* (bytes)
  int32_t code_code_adaptive;     // offset of co_code_adaptive (the instructions), 3.11+; -1 in 3.10
  int32_t code_firsttraceable;    // int _co_firsttraceable, 3.11+; -1 in 3.10

  // PyObject / PyVarObject / PyBytesObject.
  int32_t object_type;            // offsetof(PyObject, ob_type)
  int32_t var_size;               // offsetof(PyVarObject, ob_size)
  int32_t bytes_data;             // offsetof(PyBytesObject, ob_sval)

  // PyASCIIObject / PyCompactUnicodeObject.
  int32_t unicode_length;         // Py_ssize_t length (code points)
  int32_t unicode_state;          // offset of the 32-bit state bit-field word
  int32_t unicode_ascii_size;     // sizeof(PyASCIIObject): compact ASCII data follows it
  int32_t unicode_compact_size;   // sizeof(PyCompactUnicodeObject): compact non-ASCII data follows it
  uint32_t state_kind_shift;      // kind = (state >> shift) & 7 (1, 2 or 4 bytes per code point)
  uint32_t state_compact_mask;    // the `compact` bit of the state word
  uint32_t state_ascii_mask;      // the `ascii` bit of the state word
};

// Generated: one entry per supported minor version, in increasing order.
extern const PythonLayout kPythonLayouts[];
extern const size_t kPythonLayoutCount;

// The layout of 3.<minor>, or nullptr when gapwatch has none for it.
const PythonLayout* python_layout_for(int minor);

}  // namespace gapwatch
