// python_stack.h: the Python stack of the calling thread, read from inside a hooked CUDA call.
//
// "Which line of my code syncs?" needs the Python frames of the thread that made the call. They
// are read here without calling the interpreter: no GIL (the thread does not hold it: ctypes and
// PyTorch release it around blocking calls), no API that could allocate, lock or run Python. The
// walk reads CPython's private structs at the offsets of python_layout.h:
//   the interpreter: _PyRuntime, found by symbol (in the executable, as Debian's python3 links it,
//     or in a libpython3.X.so loaded at any time, globally or not); its version from Py_Version
//     (3.11+) or Py_GetVersion() (3.10), never a file name; from 3.13 the table is checked against
//     the interpreter's own _Py_DebugOffsets (python_debug_offsets.h);
//   the thread: its own PyThreadState, from the pthread key CPython keeps for PyGILState (set for
//     every thread that ever ran Python, whether it holds the GIL now or not; read with
//     pthread_getspecific, so no other thread's state is ever touched);
//   the frames: from the thread state's current frame through `previous`, each frame's code
//     object, file, qualified name and line (python_line_table.h).
// Why it is safe: the frames of the calling thread cannot change while that thread is inside the
// hooked call (only the thread itself pushes and pops them), every object is checked against the
// process's readable mappings before it is read (readable_ranges.h: a pointer to nowhere costs
// the stack, not the process), and every object read is checked (pointer plausibility, the
// object's type against the interpreter's own PyCode_Type, PyUnicode_Type and PyBytes_Type,
// bounded sizes and depth) before its fields are used. Any doubt records no stack and says why
// (PythonStackMiss); nothing here blocks for long (a re-read of the mappings waits at most a
// millisecond for walks that began before it) or allocates (the mappings' arrays are mapped once).
//
// Another thread's stack (the sampler's, python_sampler.h) is read by the same walk, but through
// process_vm_readv: its frames change under the reader, and a stale pointer must cost a sample,
// never a fault (docs/design/python-sampling.md).
//
// Threads: capture() may be called from any user thread, concurrently. The interpreter is looked
// up on first use and again at most once a second while none is found (an embedded interpreter
// may be loaded late), under a mutex that only that lookup takes.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace gapwatch {

// Why a call got no Python stack. kNoInterpreter and kNotPythonThread are not misses: the
// process or the thread runs no Python (a C++ program, a CUDA worker thread of a library).
enum class PythonStackMiss : uint8_t {
  kNone = 0,
  kNoInterpreter,     // no CPython in the process (yet)
  kNotPythonThread,   // this thread has no Python thread state
  kUnknownVersion,    // a CPython whose layout gapwatch does not have (3.15+, <3.10)
  kSubinterpreter,    // the thread runs a subinterpreter: its layout is not checked
  kNoFrame,           // a Python thread with no Python frame (between calls, or exiting)
  kInvalid,           // a value failed a sanity check (a frame being torn down, a foreign build)
  kUnreadable,        // memory could not be read: another thread's (a torn or stale pointer), or an
                      // object of the calling thread's outside every readable mapping
  kChanged,           // another thread's innermost frame changed while its stack was read
  kFreeThreaded,      // a free-threaded build (3.13t): its objects and frames are laid out otherwise
  kLayoutMismatch,    // 3.13+'s own _Py_DebugOffsets disagree with the table (a debug or patched build)
  kCount
};

// The text of one stack: a line per frame, innermost first, each "function\tfile\tline" (line 0
// when not known); a last line "...\t\t0" when the stack was deeper than kMaxPythonFrames.
inline constexpr size_t kMaxPythonFrames = 48;
inline constexpr size_t kMaxPythonStackText = 8192;

// Writes the calling thread's Python stack into `text` (capacity `capacity`, kMaxPythonStackText
// is always enough) and returns its length; 0 when there is none, with `*miss` saying why.
size_t capture_python_stack(char* text, size_t capacity, PythonStackMiss* miss);

// The calling thread's PyThreadState, or nullptr (no interpreter, or a thread that runs no
// Python): what capture_other_thread_python_stack() is later given to read this thread's stack
// from another thread. Cheap after the first call: a pthread_getspecific.
const void* current_python_thread_state();

// What reading other threads' stacks keeps between reads (the code objects it has named):
// made once by the one thread that reads (the sampler's), about 800 KiB.
struct PythonReadState;
PythonReadState* new_python_read_state();
void delete_python_read_state(PythonReadState* state);
// Walks that found the last stack unchanged, and process_vm_readv calls made (GAPWATCH_LOG=info).
uint64_t python_read_state_unchanged(const PythonReadState* state);
uint64_t python_read_state_reads(const PythonReadState* state);

// The Python stack of another thread, whose state is `tstate` (current_python_thread_state() on
// that thread) and whose pthread_self() is `thread_id`, read while it runs (python_sampler.h).
// Every read goes through process_vm_readv on our own pid: a pointer torn or freed under the
// walk gives no stack (kUnreadable, with the read's errno in `*read_error`, kInvalid, or kChanged
// when the innermost frame is not the same after the walk), never a fault. Not async-signal-safe;
// never blocks; allocates nothing. Same text format as capture_python_stack.
size_t capture_other_thread_python_stack(PythonReadState* state, const void* tstate, unsigned long thread_id,
                                         char* text, size_t capacity, PythonStackMiss* miss, int* read_error);

// The interpreter's minor version once found (3.<minor>), else 0. For the start-up note.
int python_minor_found();

}  // namespace gapwatch
