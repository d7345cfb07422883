/* layout_probe.c: prints the PythonLayout initializer (interpose/python_layout.h) of the CPython
 * whose headers it is compiled against. scripts/gen-python-layouts.sh compiles it once per
 * interpreter with -DPy_BUILD_CORE -I<include> -I<include>/internal and collects the lines into
 * interpose/python_layouts.inc.
 *
 * offsetof() on the interpreter's own structs rather than numbers copied from its source: the
 * private structs move between patch releases' headers only rarely, but a hand-copied offset that
 * is wrong reads garbage silently inside a user's process, while a probe that no longer compiles
 * says so here. The order of the printed fields is the order of struct PythonLayout. */
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 10 || PY_MINOR_VERSION > 14
#error "gapwatch knows the layouts of CPython 3.10 to 3.14 only"
#endif
#ifdef Py_GIL_DISABLED
#error "free-threaded builds have other layouts"
#endif

#include "internal/pycore_runtime.h"
#if PY_MINOR_VERSION == 10
#include "frameobject.h"
#elif PY_MINOR_VERSION <= 13
#include "internal/pycore_frame.h"
#else
#include "internal/pycore_interpframe_structs.h"
#endif

/* The 32-bit word at the state member of a PyASCIIObject whose state bit-field holds only what
 * set() wrote: how the compiler packed the bit-fields is the one thing offsetof cannot tell. */
static uint32_t state_word(const PyASCIIObject* object) {
  uint32_t word;
  memcpy(&word, (const char*)object + offsetof(PyASCIIObject, state), sizeof word);
  return word;
}

static unsigned lowest_bit(uint32_t word) {
  unsigned shift = 0;
  while (shift < 32 && !(word & (1u << shift))) ++shift;
  return shift;
}

int main(void) {
  PyASCIIObject object;
  memset(&object, 0, sizeof object);
  object.state.kind = 7;
  const uint32_t kind_bits = state_word(&object);
  memset(&object, 0, sizeof object);
  object.state.compact = 1;
  const uint32_t compact_mask = state_word(&object);
  memset(&object, 0, sizeof object);
  object.state.ascii = 1;
  const uint32_t ascii_mask = state_word(&object);
  const unsigned kind_shift = lowest_bit(kind_bits);
  if (kind_bits != (7u << kind_shift) || !compact_mask || (compact_mask & (compact_mask - 1)) ||
      !ascii_mask || (ascii_mask & (ascii_mask - 1))) {
    fprintf(stderr, "layout_probe: unexpected state bit-field packing\n");
    return 1;
  }

#if PY_MINOR_VERSION <= 11
  const long runtime_tss = offsetof(_PyRuntimeState, gilstate.autoTSSkey);
#else
  const long runtime_tss = offsetof(_PyRuntimeState, autoTSSkey);
#endif

#if PY_MINOR_VERSION == 10
  const long tstate_frame = offsetof(PyThreadState, frame);
  const long cframe_current_frame = -1;
  const long frame_previous = offsetof(PyFrameObject, f_back);
  const long frame_code = offsetof(PyFrameObject, f_code);
  const long frame_instr = offsetof(PyFrameObject, f_lasti);
  const long frame_owner = -1;
  const long frame_state = offsetof(PyFrameObject, f_state);
#elif PY_MINOR_VERSION <= 12
  const long tstate_frame = offsetof(PyThreadState, cframe);
  const long cframe_current_frame = offsetof(_PyCFrame, current_frame);
  const long frame_previous = offsetof(_PyInterpreterFrame, previous);
  const long frame_code = offsetof(_PyInterpreterFrame, f_code);
  const long frame_instr = offsetof(_PyInterpreterFrame, prev_instr);
  const long frame_owner = offsetof(_PyInterpreterFrame, owner);
  const long frame_state = -1;
#else
  const long tstate_frame = offsetof(PyThreadState, current_frame);
  const long cframe_current_frame = -1;
  const long frame_previous = offsetof(_PyInterpreterFrame, previous);
  const long frame_code = offsetof(_PyInterpreterFrame, f_executable);
  const long frame_instr = offsetof(_PyInterpreterFrame, instr_ptr);
  const long frame_owner = offsetof(_PyInterpreterFrame, owner);
  const long frame_state = -1;
#endif

#if PY_MINOR_VERSION == 10
  const long code_qualname = -1;
  const long code_code_adaptive = -1;
  const long code_firsttraceable = -1;
#else
  const long code_qualname = offsetof(PyCodeObject, co_qualname);
  const long code_code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
  const long code_firsttraceable = offsetof(PyCodeObject, _co_firsttraceable);
#endif

  printf("{%d, %ld, %ld, %ld, %ld,  %ld, %ld, %ld, %ld,  %ld, %ld, %ld, %ld, %ld,  "
         "%ld, %ld, %ld, %ld, %ld, %ld, %ld,  %ld, %ld, %ld,  %ld, %ld, %ld, %ld, %uu, 0x%xu, 0x%xu},"
         "  // %s\n",
         PY_MINOR_VERSION, runtime_tss, (long)offsetof(Py_tss_t, _is_initialized),
         (long)offsetof(Py_tss_t, _key), (long)offsetof(_PyRuntimeState, interpreters.main),
         (long)offsetof(PyThreadState, interp), (long)offsetof(PyThreadState, thread_id), tstate_frame,
         cframe_current_frame, frame_previous, frame_code, frame_instr, frame_owner, frame_state,
         (long)offsetof(PyCodeObject, co_filename), (long)offsetof(PyCodeObject, co_name), code_qualname,
         (long)offsetof(PyCodeObject, co_firstlineno), (long)offsetof(PyCodeObject, co_linetable),
         code_code_adaptive, code_firsttraceable, (long)offsetof(PyObject, ob_type),
         (long)offsetof(PyVarObject, ob_size), (long)offsetof(PyBytesObject, ob_sval),
         (long)offsetof(PyASCIIObject, length), (long)offsetof(PyASCIIObject, state),
         (long)sizeof(PyASCIIObject), (long)sizeof(PyCompactUnicodeObject), kind_shift, compact_mask,
         ascii_mask, PY_VERSION);
  return 0;
}
