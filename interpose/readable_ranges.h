// readable_ranges.h: which of this process's memory a plain load can read without faulting, for
// the Python stack walk on the calling thread (python_stack.cpp).
//
// That walk follows pointers it found in the interpreter's memory. A pointer that fails no check
// of the walk can still point nowhere (a debug or patched build whose layout differs from the
// table, a struct torn down under the walk): a plain load would fault the user's process. Each
// read is checked here first: a plain load only inside the readable private and anonymous mappings
// of /proc/self/maps (the heap, pymalloc's arenas, thread stacks and malloc arenas, the
// interpreter's data stack chunks) or the loaded segments of the object that holds the interpreter
// (its statics: _PyRuntime, static types, 3.11+'s deep-frozen code objects). Anything else (a
// mapping newer than the last read, another library's file, a device) is read by the caller with
// process_vm_readv(2) of its own pid, which returns EFAULT where a load would fault (and never
// reads a device's I/O mapping): a load happens only where memory was mapped when last looked.
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
// of walks read them at once and no walk waits for a re-read to finish reading them (two copies:
// a re-read fills the one no walk holds, then makes it current; readable_ranges.cpp); a walk that
// wants a re-read while another thread makes one waits for that one, at most a millisecond.
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
  // at most once per walk (when the pace of re-reads allows) and looks again. Inline: a walk
  // checks every read, and its reads go to a handful of ranges (the frames' data stack chunk,
  // the arenas of its code objects and strings, the interpreter's statics), kept here.
  bool covers(const void* address, size_t n) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(address);
    const uintptr_t end = start + n;
    for (const Kept& k : kept_)
      if (start >= k.start && end <= k.end && end >= start) return true;
    return covers_slow(start, end);
  }

 private:
  struct Kept {
    uintptr_t start = 0, end = 0;
  };
  friend size_t readable_range_count();
  void hold();
  bool find(uintptr_t start, uintptr_t end);
  bool covers_slow(uintptr_t start, uintptr_t end);
  int held_ = 0;
  static constexpr size_t kKept = 4;
  Kept kept_[kKept];  // the ranges the last checks matched, the latest first
  bool reread_ = false;
};

// For tests and the log: the number of ranges held and of re-reads made.
size_t readable_range_count();
uint64_t readable_range_rereads();

}  // namespace gapwatch
