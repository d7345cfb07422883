// readable_ranges.h: which of this process's memory a plain load can read without faulting, for
// the Python stack walk on the calling thread (python_stack.cpp).
//
// That walk follows pointers it found in the interpreter's memory. A pointer that fails no check
// of the walk can still point nowhere (a debug or patched build whose layout differs from the
// table, a struct torn down under the walk): a plain load would fault the user's process. Each
// object is checked here against the process's mappings before it is read: the readable private
// and anonymous mappings of /proc/self/maps (the heap, pymalloc's arenas, thread stacks, the
// interpreter's data stack chunks) and the loaded segments of the object that holds the
// interpreter (its statics: _PyRuntime, static types, 3.11+'s deep-frozen code objects). Nothing
// else: a file mapping of another library, a device mapping (/dev/nvidia*, where a read can have
// effects) or [vvar] is never read, and an object there fails the walk (counted as a miss).
//
// Why this and not process_vm_readv for every read (what the sampler does for another thread):
// on these machines one process_vm_readv costs 1.4-5 us and a walk makes dozens of reads; a check
// here is a compare against the last range that matched, else a binary search
// (docs/performance.md, "Python stacks at blocking calls"). What it cannot catch: a mapping
// unmapped between the check and the load. The calling thread's own frames, and the code objects
// and strings they hold references to, cannot be freed while it is inside the hooked call; only a
// wrong pointer into memory another thread unmaps in that instant could still fault.
//
// The ranges are read at the interpreter's lookup and again when an object is outside all of them
// (a new arena), paced so that re-reading takes at most about 1% of the time. Threads: any number
// of walks read them at once, none ever waits for a re-read (two copies: a re-read fills the one no
// walk holds, then makes it current; readable_ranges.cpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace gapwatch {

// The interpreter's object: its PT_LOAD segments (as loaded, bss included) are readable. Called at
// lookup, with an address inside that object (&_PyRuntime), before the first walk.
void note_interpreter_image(const void* address_inside);

// One walk's view of the ranges: holds the current copy from construction to destruction.
class ReadableRangesView {
 public:
  ReadableRangesView();
  ~ReadableRangesView();
  ReadableRangesView(const ReadableRangesView&) = delete;
  ReadableRangesView& operator=(const ReadableRangesView&) = delete;

  // Whether [address, address + n) lies inside one readable range. A miss re-reads the mappings
  // at most once per walk (when the pace of re-reads allows) and looks again.
  bool covers(const void* address, size_t n);

 private:
  friend size_t readable_range_count();
  void hold();
  bool find(uintptr_t start, uintptr_t end);
  int held_ = 0;
  uintptr_t last_start_ = 0, last_end_ = 0;  // the range the last check matched
  bool reread_ = false;
};

// For tests and the log: the number of ranges held and of re-reads made.
size_t readable_range_count();
uint64_t readable_range_rereads();

}  // namespace gapwatch
