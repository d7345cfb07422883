#include "python_stack.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "python_debug_offsets.h"
#include "python_layout.h"
#include "python_line_table.h"
#include "readable_ranges.h"

namespace gapwatch {
namespace {

// What the lookup found, published once complete (release) and never changed after.
struct Interpreter {
  const PythonLayout* layout = nullptr;
  const char* runtime = nullptr;  // &_PyRuntime
  const void* code_type = nullptr;
  const void* unicode_type = nullptr;
  const void* bytes_type = nullptr;
  const void* frame_type = nullptr;  // PyFrame_Type: 3.10's frames are objects
  int minor = 0;
  // Why there is no layout to walk with (kUnknownVersion, kFreeThreaded, kLayoutMismatch).
  PythonStackMiss unusable = PythonStackMiss::kNone;
};

Interpreter g_interpreter;
std::atomic<const Interpreter*> g_found{nullptr};
// Found, but not walked: why (kNone while none is found, or one is found that is walked).
std::atomic<PythonStackMiss> g_unusable{PythonStackMiss::kNone};
std::atomic<int64_t> g_next_lookup_ns{0};
std::mutex g_lookup_mu;  // only the lookup takes it

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The interpreter's own version as PY_VERSION_HEX (0x030d00f0: 3.13.0 final), else 0. From 3.11
// the runtime exports it as data (Py_Version); before, only as text from Py_GetVersion(), which
// formats constants into a static buffer (no allocation, no lock, no thread state: callable from
// any thread, before Py_Initialize too), and only major and minor are taken from it. Never from a
// file name: where libpython is linked into the executable (Ubuntu 22.04's python3.10, conda's,
// most containers' pythons) the file that holds _PyRuntime is the program, named "python" or
// "python3", with no version in it.
uint64_t interpreter_version(void* scope) {
  if (auto* hex = static_cast<const unsigned long*>(dlsym(scope, "Py_Version"))) return *hex;
  auto* get_version = reinterpret_cast<const char* (*)()>(dlsym(scope, "Py_GetVersion"));
  const char* text = get_version ? get_version() : nullptr;
  if (!text || text[0] != '3' || text[1] != '.' || text[2] < '0' || text[2] > '9') return 0;
  return (uint64_t(3) << 24) | (uint64_t(atoi(text + 2) & 0xff) << 16);
}

struct LibpythonSearch {
  char path[512];
};

int find_libpython(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<LibpythonSearch*>(data);
  const char* name = info->dlpi_name;
  if (!name || !strstr(name, "libpython3.")) return 0;
  snprintf(search->path, sizeof search->path, "%s", name);
  return 1;
}

// Looks for the interpreter: in the global scope first (the executable, or a libpython the
// executable links), then in a libpython loaded locally (an embedded interpreter dlopen()ed by a
// plugin). Every CPython 3 exports Py_GetVersion; _PyRuntime, which the walk starts from, only
// 3.7 and later. Returns whether one was found, supported or not (out->layout null: not).
bool look_up(Interpreter* out) {
  void* scope = RTLD_DEFAULT;
  if (!dlsym(RTLD_DEFAULT, "Py_GetVersion")) {
    LibpythonSearch search{};
    if (!dl_iterate_phdr(find_libpython, &search)) return false;
    // RTLD_NOLOAD: only a reference to what is already there; never loads anything.
    void* handle = dlopen(search.path, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return false;
    if (!dlsym(handle, "Py_GetVersion")) return dlclose(handle), false;
    scope = handle;
  }
  const uint64_t version = interpreter_version(scope);
  const int minor = (version >> 24) == 3 ? int((version >> 16) & 0xff) : 0;
  out->minor = minor;
  out->runtime = static_cast<const char*>(dlsym(scope, "_PyRuntime"));
  out->layout = out->runtime ? python_layout_for(minor) : nullptr;
  out->unusable = out->layout ? PythonStackMiss::kNone : PythonStackMiss::kUnknownVersion;
  out->code_type = dlsym(scope, "PyCode_Type");
  out->unicode_type = dlsym(scope, "PyUnicode_Type");
  out->bytes_type = dlsym(scope, "PyBytes_Type");
  out->frame_type = dlsym(scope, "PyFrame_Type");
  if (!out->code_type || !out->unicode_type || !out->bytes_type || (minor == 10 && !out->frame_type))
    out->layout = nullptr, out->unusable = PythonStackMiss::kUnknownVersion;
  // 3.13+ describes its own layout at the start of _PyRuntime (python_debug_offsets.h): the table
  // is used only where the two agree. _PyRuntime is the interpreter's static data: read in place.
  if (out->layout && minor >= 13) {
    const char* field = nullptr;
    const DebugOffsetsVerdict verdict = check_debug_offsets(reinterpret_cast<const uint8_t*>(out->runtime), version,
                                                            *out->layout, &field);
    if (verdict != DebugOffsetsVerdict::kAgrees) {
      out->layout = nullptr;
      out->unusable = verdict == DebugOffsetsVerdict::kFreeThreaded ? PythonStackMiss::kFreeThreaded
                                                                    : PythonStackMiss::kLayoutMismatch;
    }
  }
  // A handle opened above stays open on purpose: the interpreter's memory must outlive every later
  // read (the library is never unloaded while its frames run, but a plugin's dlclose could be).
  return true;
}

const Interpreter* interpreter(PythonStackMiss* miss) {
  if (const Interpreter* found = g_found.load(std::memory_order_acquire)) return found;
  if (PythonStackMiss why = g_unusable.load(std::memory_order_relaxed); why != PythonStackMiss::kNone)
    return *miss = why, nullptr;
  *miss = PythonStackMiss::kNoInterpreter;
  const int64_t now = now_ns();
  if (now < g_next_lookup_ns.load(std::memory_order_relaxed)) return nullptr;
  std::unique_lock<std::mutex> lock(g_lookup_mu, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;  // another thread is looking: this call goes without
  if (const Interpreter* found = g_found.load(std::memory_order_acquire)) return found;
  g_next_lookup_ns.store(now + 1000000000, std::memory_order_relaxed);
  Interpreter candidate;
  if (!look_up(&candidate)) return nullptr;
  if (!candidate.layout) {
    g_unusable.store(candidate.unusable, std::memory_order_relaxed);
    return *miss = candidate.unusable, nullptr;
  }
  note_interpreter_image(candidate.runtime);  // before any walk: the ranges it checks against
  g_interpreter = candidate;
  g_found.store(&g_interpreter, std::memory_order_release);
  return &g_interpreter;
}

// ---- reading interpreter memory ----------------------------------------------------------------

// A pointer that could be a heap or static object's: non-null, aligned, in the user half of the
// x86-64 address space, above the first page. It does not prove the memory is mapped: reads of
// another thread's frames go through OtherThreadMemory, which cannot fault.
bool plausible(const void* p, uintptr_t align = 8) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return v >= 4096 && v < (uintptr_t(1) << 47) && (v & (align - 1)) == 0;
}

// How the walk reads: `read` copies n bytes at `address` (false: they could not be read), `bytes`
// gives n readable bytes that stay valid until the next call of `bytes` (nullptr: not readable).
// A failed read leaves `failed` set; the walk gives up at the next check (no stack, never a wrong
// frame built from zeros: every value read as zero fails a check).

// The interpreter's own static data (_PyRuntime), mapped while the process lives (its object is
// held open): plain loads.
struct RuntimeMemory {
  static constexpr bool kCachesCode = false;
  bool failed = false;
  bool read(const void* address, void* out, size_t n) {
    memcpy(out, address, n);
    return true;
  }
};

// The calling thread's own frames, which cannot change while it is inside the hooked call: plain
// loads of what lies in the process's readable mappings as last read (readable_ranges.h), and a
// process_vm_readv(2) of our own pid for anything else (a mapping newer than the last read: a new
// thread's stack or malloc arena), which says EFAULT where a load would fault. So a pointer to
// nowhere (a build laid out otherwise than the table, which no other check caught) costs the
// stack, never the process, and the common case costs a compare per read.
struct OwnMemory {
  static constexpr bool kCachesCode = false;
  static constexpr size_t kScratch = 4096;  // bytes() of memory outside the ranges: a name, a line table
  bool failed = false;
  ReadableRangesView ranges;
  uint8_t scratch[kScratch];
  bool read(const void* address, void* out, size_t n) {
    if (ranges.covers(address, n)) {
      memcpy(out, address, n);
      return true;
    }
    return read_outside(address, out, n);
  }
  const uint8_t* bytes(const void* address, size_t n) {
    if (n == 0 || ranges.covers(address, n)) return static_cast<const uint8_t*>(address);
    return n <= kScratch && read_outside(address, scratch, n) ? scratch : nullptr;
  }
  bool read_again(const void* address, void* out, size_t n) { return read(address, out, n); }

 private:
  static bool read_outside(const void* address, void* out, size_t n) {
    if (!plausible(address, 1)) return false;
    iovec local{out, n};
    iovec remote{const_cast<void*>(address), n};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == ssize_t(n);
  }
};

}  // namespace

// What the sampler keeps between samples of another thread's stack (python_sampler.h): the code
// objects it has named, so that a steady stack costs a read per frame rather than eight.
struct PythonReadState {
  static constexpr size_t kScratch = 64 * 1024;  // a line table or a name, copied to be decoded
  static constexpr size_t kBlock = 256;
  static constexpr size_t kBlocks = 64;          // direct-mapped by address; kept for one walk
  static constexpr size_t kWindowPages = 4;      // below and at the innermost frame (3.11+)
  static constexpr size_t kPage = 4096;
  static constexpr size_t kCodes = 512;          // direct-mapped by code address
  static constexpr size_t kLinesPerCode = 8;

  // A code object as last named: its address, the fields that say it is still the same object
  // (a freed one's address reused by another differs in them), its "function<TAB>file" text, and
  // the lines of the last few instruction offsets asked for.
  struct Code {
    const void* code = nullptr;
    uint64_t identity[5] = {};  // type, filename, name, line table, first line
    uint16_t text_length = 0;
    char text[376];
    int32_t offsets[kLinesPerCode];
    int32_t lines[kLinesPerCode];
    uint8_t lines_kept = 0, next_line = 0;
  };

  // The last stack read, and the chain of frames it was read from (3.11+): a thread still in
  // the same frames at the same instructions (blocked in a queue's wait, a sleep) has the same
  // stack, taken without reading a code object.
  struct FrameKey {
    const void* frame;
    const void* code;
    const void* instr;
    bool operator==(const FrameKey&) const = default;
  };
  static constexpr size_t kMaxChain = 4 * kMaxPythonFrames;
  FrameKey chain[kMaxChain];
  size_t chain_length = 0;
  // Where each frame of `chain` put its line in last_text (offset, length; length 0: none, the
  // frame was skipped), and the same for the walk in progress.
  struct Span {
    uint16_t offset, length;
  };
  static constexpr uint16_t kNotWalked = 0xffff;  // Span::offset of a frame the walk did not reach
  Span spans[kMaxChain];
  Span walking[kMaxChain];
  // The walk in progress: frames from `reusable_from` down are the last chain's, `shift` places
  // further down it; `text` is where the walk writes.
  size_t reusable_from = kMaxChain, shift = 0;
  const char* text = nullptr;
  char last_text[kMaxPythonStackText];
  size_t last_length = 0;
  uint64_t unchanged = 0;  // walks that found the last stack unchanged
  uint64_t syscalls = 0;   // process_vm_readv calls made

  uint8_t scratch[kScratch];
  uintptr_t tags[kBlocks] = {};  // 0: empty (no block at address 0 is ever read)
  uint8_t blocks[kBlocks][kBlock];
  // Copies of the pages around the frames (3.11+ keeps a thread's frames in data stack chunks:
  // a deep stack spans two or three): [start, end) at bytes + offset.
  static constexpr size_t kWindows = 3;
  struct Window {
    uintptr_t start = 0, end = 0;
    size_t offset = 0;
    uint8_t bytes[kWindowPages * kPage];
  };
  Window windows[kWindows];
  size_t windows_used = 0;
  Code codes[kCodes];
};

namespace {

// Another thread's frames, which change (and are freed) while they are read: every read is a
// process_vm_readv(2) of our own pid, which says EFAULT where a plain load would fault, so a torn
// or stale pointer costs a sample, never the process. Three things keep the system calls few:
// the pages at and below the innermost frame are read in one call (3.11+ keeps a thread's frames
// together in its data stack), other reads go by aligned 256-byte blocks kept for the one walk (a
// block never crosses a page, so it is read whole or not at all), and code objects named before
// are recognised by one read of their identifying fields (kCachesCode: put_frame).
class OtherThreadMemory {
 public:
  static constexpr bool kCachesCode = true;
  bool failed = false;
  int error = 0;  // errno of the first failed read

  explicit OtherThreadMemory(PythonReadState& state) : s_(state) {
    memset(s_.tags, 0, sizeof s_.tags);
    s_.windows_used = 0;
  }

  bool in_window(const void* address) const {
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    for (size_t i = 0; i < s_.windows_used; ++i)
      if (at >= s_.windows[i].start && at < s_.windows[i].end) return true;
    return false;
  }

  bool read(const void* address, void* out, size_t n) {
    uintptr_t at = reinterpret_cast<uintptr_t>(address);
    for (size_t i = 0; i < s_.windows_used; ++i) {
      const PythonReadState::Window& w = s_.windows[i];
      if (at >= w.start && at + n <= w.end && at + n >= at) {
        memcpy(out, w.bytes + w.offset + (at - w.start), n);
        return true;
      }
    }
    auto* to = static_cast<uint8_t*>(out);
    while (n > 0) {
      const uintptr_t base = at & ~uintptr_t(PythonReadState::kBlock - 1);
      const uint8_t* block = cached(base);
      if (!block) return false;
      const size_t take = std::min(n, size_t(base + PythonReadState::kBlock - at));
      memcpy(to, block + (at - base), take);
      at += take, to += take, n -= take;
    }
    return true;
  }

  // A read that bypasses everything kept: what is there now.
  bool read_again(const void* address, void* out, size_t n) { return copy(address, out, n); }

  const uint8_t* bytes(const void* address, size_t n) {
    if (n > PythonReadState::kScratch) return nullptr;
    if (n == 0) return s_.scratch;
    return copy(address, s_.scratch, n) ? s_.scratch : nullptr;
  }

  // Reads the page holding `frame` and up to three below it, in one call: the remote pieces go
  // from the frame's page down (and the local ones from the window's end down, so the pages land
  // in address order), and the read stops at the first unmapped page, keeping those above it:
  // the frames nearest the innermost one.
  void read_window(const void* frame) {
    constexpr size_t kPage = PythonReadState::kPage, kPages = PythonReadState::kWindowPages;
    const uintptr_t top = reinterpret_cast<uintptr_t>(frame) & ~uintptr_t(kPage - 1);
    if (top < kPages * kPage || s_.windows_used == PythonReadState::kWindows) return;
    PythonReadState::Window& w = s_.windows[s_.windows_used];
    iovec local[kPages], remote[kPages];
    for (size_t i = 0; i < kPages; ++i) {
      local[i] = {w.bytes + (kPages - 1 - i) * kPage, kPage};
      remote[i] = {reinterpret_cast<void*>(top - i * kPage), kPage};
    }
    ++s_.syscalls;
    const ssize_t got = process_vm_readv(getpid(), local, kPages, remote, kPages, 0);
    if (got < ssize_t(kPage)) return;
    const size_t pages = size_t(got) / kPage;
    w.start = top - (pages - 1) * kPage;
    w.end = top + kPage;
    w.offset = (kPages - pages) * kPage;
    ++s_.windows_used;
  }

  PythonReadState& state() { return s_; }

  // The frame at `index` of the chain (from the innermost) is the one the last walk read at the
  // same instruction: its line (or its skip) is the last one's. Returns whether it was reused,
  // with *skipped when the last walk had no line for it.
  bool reuse_line(size_t index, char*& out, char* end, bool* skipped) {
    if (index < s_.reusable_from || index >= PythonReadState::kMaxChain) return false;
    const PythonReadState::Span span = s_.spans[index + s_.shift];
    if (span.offset == PythonReadState::kNotWalked) return false;  // below the last walk's cut
    *skipped = span.length == 0;
    if (!*skipped) {
      if (size_t(end - out) < span.length) return false;
      memcpy(out, s_.last_text + span.offset, span.length);
      out += span.length;
    }
    note_line(index, out - span.length, span.length);
    return true;
  }
  void note_line(size_t index, const char* start, size_t length) {
    if (index < PythonReadState::kMaxChain)
      s_.walking[index] = {uint16_t(start - s_.text), uint16_t(length)};
  }

  PythonReadState::Code& code_slot(const void* code) {
    return s_.codes[(reinterpret_cast<uintptr_t>(code) >> 4) % PythonReadState::kCodes];
  }

 private:
  bool copy(const void* address, void* out, size_t n) {
    if (!plausible(address, 1)) return note(EFAULT);
    iovec local{out, n};
    iovec remote{const_cast<void*>(address), n};
    ++s_.syscalls;
    const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got != ssize_t(n)) return note(got < 0 ? errno : EFAULT);
    return true;
  }
  bool note(int e) {
    if (!error) error = e;
    return false;
  }
  const uint8_t* cached(uintptr_t base) {
    const size_t slot = (base / PythonReadState::kBlock) % PythonReadState::kBlocks;
    if (s_.tags[slot] == base) return s_.blocks[slot];
    if (!copy(reinterpret_cast<const void*>(base), s_.blocks[slot], PythonReadState::kBlock)) return nullptr;
    s_.tags[slot] = base;
    return s_.blocks[slot];
  }

  PythonReadState& s_;
};

template <class Memory, class T>
T field(Memory& memory, const void* base, int32_t offset) {
  T value{};
  if (!memory.read(static_cast<const char*>(base) + offset, &value, sizeof value)) {
    memory.failed = true;
    return T{};
  }
  return value;
}

template <class Memory>
const void* pointer_at(Memory& memory, const void* base, int32_t offset) {
  return field<Memory, const void*>(memory, base, offset);
}

template <class Memory>
bool has_type(Memory& memory, const Interpreter& py, const void* object, const void* type) {
  return plausible(object) && pointer_at(memory, object, py.layout->object_type) == type;
}

// Appends one UTF-8 code point; false when it does not fit.
bool put_code_point(uint32_t c, char*& out, char* end) {
  char buf[4];
  size_t n;
  if (c < 0x80) buf[0] = char(c), n = 1;
  else if (c < 0x800) buf[0] = char(0xc0 | (c >> 6)), buf[1] = char(0x80 | (c & 0x3f)), n = 2;
  else if (c < 0x10000) buf[0] = char(0xe0 | (c >> 12)), buf[1] = char(0x80 | ((c >> 6) & 0x3f)), buf[2] = char(0x80 | (c & 0x3f)), n = 3;
  else if (c < 0x110000) buf[0] = char(0xf0 | (c >> 18)), buf[1] = char(0x80 | ((c >> 12) & 0x3f)), buf[2] = char(0x80 | ((c >> 6) & 0x3f)), buf[3] = char(0x80 | (c & 0x3f)), n = 4;
  else return false;
  if (end - out < ptrdiff_t(n)) return false;
  memcpy(out, buf, n);
  out += n;
  return true;
}

// Copies a str object's text as UTF-8, at most `limit` code points (the last ones when
// `keep_tail`: a long path keeps its file name). Tabs and newlines, which separate the stack's
// fields, become spaces. False when `object` is not a compact str.
template <class Memory>
bool copy_str(Memory& memory, const Interpreter& py, const void* object, size_t limit, bool keep_tail, char*& out,
              char* end) {
  const PythonLayout& l = *py.layout;
  if (!has_type(memory, py, object, py.unicode_type)) return false;
  const int64_t length = field<Memory, int64_t>(memory, object, l.unicode_length);
  if (length < 0 || length > (int64_t(1) << 20)) return false;
  const uint32_t state = field<Memory, uint32_t>(memory, object, l.unicode_state);
  if (!(state & l.state_compact_mask)) return false;  // code objects' names are always compact
  const bool ascii = state & l.state_ascii_mask;
  const uint32_t kind = ascii ? 1 : (state >> l.state_kind_shift) & 7;
  if (kind != 1 && kind != 2 && kind != 4) return false;
  const char* text = static_cast<const char*>(object) + (ascii ? l.unicode_ascii_size : l.unicode_compact_size);
  int64_t first = 0, count = length;
  if (count > int64_t(limit)) {
    if (keep_tail) first = count - int64_t(limit);
    count = int64_t(limit);
  }
  // Only the code points copied are read (limit is at most a few hundred).
  const char* data = reinterpret_cast<const char*>(memory.bytes(text + first * kind, size_t(count) * kind));
  if (!data) return memory.failed = true, false;
  data -= first * kind;
  if (ascii) {
    // The common case (every path and name in an ASCII tree): one copy, then the separators
    // replaced. Copied code point by code point, names and paths took about a third of a stack's
    // cost (bench/python_stack_cost.py, depth 25: 12.5 us a blocking call before, 8.0 after).
    if (end - out < count) return false;
    memcpy(out, data + first, size_t(count));
    for (char* p = out; p < out + count; ++p)
      if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    out += count;
    return true;
  }
  for (int64_t i = first; i < first + count; ++i) {
    uint32_t c;
    uint16_t c16;
    if (kind == 1) c = static_cast<unsigned char>(data[i]);
    else if (kind == 2) memcpy(&c16, data + i * 2, 2), c = c16;
    else memcpy(&c, data + i * 4, 4);
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    if (!put_code_point(c, out, end)) return false;
  }
  return true;
}

bool put_text(const char* s, char*& out, char* end) {
  const size_t n = strlen(s);
  if (size_t(end - out) < n) return false;
  memcpy(out, s, n);
  out += n;
  return true;
}

// The line of `byte_offset` in `code` (whose co_linetable is `linetable`), 0 where not known.
// `*read` says whether the table was read (a line from an unread table is not kept for later).
template <class Memory>
bool line_of(Memory& memory, const Interpreter& py, const void* linetable, int firstlineno, int byte_offset,
             int* line, bool* read = nullptr) {
  const PythonLayout& l = *py.layout;
  if (!has_type(memory, py, linetable, py.bytes_type)) return false;
  const int64_t table_len = field<Memory, int64_t>(memory, linetable, l.var_size);
  if (table_len < 0 || table_len > (int64_t(1) << 24)) return false;
  *line = firstlineno;
  if (byte_offset >= 0) {
    const uint8_t* table = memory.bytes(static_cast<const char*>(linetable) + l.bytes_data, size_t(table_len));
    // A table the reader cannot hold (another thread's, over its scratch) gives no line, not no frame.
    *line = table ? python_line_at(l.minor, table, size_t(table_len), firstlineno, byte_offset) : 0;
    if (read) *read = table != nullptr;
  } else if (read) {
    *read = true;
  }
  if (*line < 0) *line = 0;
  return true;
}

// The fields that tell one code object from another at the same address, read at once.
template <class Memory>
bool code_identity(Memory& memory, const PythonLayout& l, const void* code, uint64_t identity[5]) {
  const int32_t name = l.code_qualname >= 0 ? l.code_qualname : l.code_name;
  const int32_t offsets[5] = {l.object_type, l.code_filename, name, l.code_linetable, l.code_firstlineno};
  int32_t lo = offsets[0], hi = offsets[0];
  for (int32_t o : offsets) lo = std::min(lo, o), hi = std::max(hi, o);
  uint8_t bytes[512];
  const size_t span = size_t(hi - lo) + 8;
  // Through the blocks of this walk (fresh for each), which the frame walk's own checks of the
  // code object have read already.
  if (span > sizeof bytes || !memory.read(static_cast<const char*>(code) + lo, bytes, span)) return false;
  for (int i = 0; i < 5; ++i) {
    identity[i] = 0;
    memcpy(&identity[i], bytes + (offsets[i] - lo), i == 4 ? sizeof(int) : sizeof(void*));
  }
  return true;
}

// One frame's line: "function\tfile\tline\n". False when its code object fails a check.
template <class Memory>
bool put_frame(Memory& memory, const Interpreter& py, const void* code, int byte_offset, char*& out, char* end) {
  const PythonLayout& l = *py.layout;
  PythonReadState::Code* cached = nullptr;
  uint64_t identity[5] = {};
  if constexpr (Memory::kCachesCode) {
    if (!code_identity(memory, l, code, identity)) return memory.failed = true, false;
    if (identity[0] != reinterpret_cast<uintptr_t>(py.code_type)) return false;
    cached = &memory.code_slot(code);
    if (cached->code == code && !memcmp(cached->identity, identity, sizeof identity)) {
      int line = -1;
      for (uint8_t i = 0; i < cached->lines_kept; ++i)
        if (cached->offsets[i] == byte_offset) line = cached->lines[i];
      if (line < 0) {
        const auto* linetable = reinterpret_cast<const void*>(uintptr_t(identity[3]));
        bool read = false;
        if (!line_of(memory, py, linetable, int(int32_t(identity[4])), byte_offset, &line, &read)) return false;
        if (!read) return memory.failed = true, false;  // the table was there a moment ago: a torn read
        const uint8_t k = cached->next_line;
        cached->offsets[k] = byte_offset, cached->lines[k] = line;
        cached->next_line = uint8_t((k + 1) % PythonReadState::kLinesPerCode);
        if (cached->lines_kept < PythonReadState::kLinesPerCode) ++cached->lines_kept;
      }
      if (size_t(end - out) < cached->text_length) return false;
      memcpy(out, cached->text, cached->text_length);
      out += cached->text_length;
      char number[16];
      snprintf(number, sizeof number, "\t%d\n", line);
      return put_text(number, out, end);
    }
  }
  const void* linetable = pointer_at(memory, code, l.code_linetable);
  const int firstlineno = field<Memory, int>(memory, code, l.code_firstlineno);
  int line = 0;
  bool table_read = false;
  if (!line_of(memory, py, linetable, firstlineno, byte_offset, &line, &table_read)) return false;
  if constexpr (Memory::kCachesCode) {
    if (!table_read) return memory.failed = true, false;  // another thread's table, torn under the read
  }
  char* const start = out;
  const void* name = pointer_at(memory, code, l.code_qualname >= 0 ? l.code_qualname : l.code_name);
  if (!copy_str(memory, py, name, 120, false, out, end) || !put_text("\t", out, end)) return false;
  if (!copy_str(memory, py, pointer_at(memory, code, l.code_filename), 240, true, out, end)) return false;
  if (cached && size_t(out - start) <= sizeof cached->text) {
    // Named from the same fields the identity holds, read in this walk: kept for the next samples.
    cached->code = code;
    memcpy(cached->identity, identity, sizeof identity);
    cached->text_length = uint16_t(out - start);
    memcpy(cached->text, start, cached->text_length);
    cached->offsets[0] = byte_offset, cached->lines[0] = line;
    cached->lines_kept = 1, cached->next_line = 1;
  }
  char number[16];
  snprintf(number, sizeof number, "\t%d\n", line);
  return put_text(number, out, end);
}

// Owners of a _PyInterpreterFrame (3.11+). From 3 up, frames that run no user code: 3.12 and
// 3.13's entry shim (FRAME_OWNED_BY_CSTACK = 3); 3.14's FRAME_OWNED_BY_INTERPRETER (3, its entry
// shim) and FRAME_OWNED_BY_CSTACK (4), both "incomplete" to CPython (_PyFrame_IsIncomplete).
constexpr char kOwnedByGenerator = 1;
constexpr char kOwnedByShim = 3;
char max_owner(const PythonLayout& l) { return l.minor >= 14 ? 4 : 3; }

// The frame's code object. 3.14 holds it as a _PyStackRef, a pointer whose low bit says whether
// the reference is counted (Py_TAG_BITS): the object is the pointer without it.
template <class Memory>
const void* frame_code(Memory& memory, const PythonLayout& l, const void* frame) {
  const void* code = pointer_at(memory, frame, l.frame_code);
  if (l.minor >= 14) code = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(code) & ~uintptr_t(3));
  return code;
}

// 3.10: frames are PyFrameObjects linked by f_back; f_lasti counts code units.
template <class Memory>
PythonStackMiss walk_frame_objects(Memory& memory, const Interpreter& py, const void* frame, char*& out, char* end,
                                   size_t* depth) {
  const PythonLayout& l = *py.layout;
  for (size_t seen = 0; frame; frame = pointer_at(memory, frame, l.frame_previous)) {
    // Another thread's chain can change under the walk into a cycle: bounded like 3.11's.
    if (++seen > 4 * kMaxPythonFrames) return PythonStackMiss::kInvalid;
    if (!has_type(memory, py, frame, py.frame_type)) return PythonStackMiss::kInvalid;
    const signed char state = field<Memory, signed char>(memory, frame, l.frame_state);
    if (state != 0 && state != 2) return PythonStackMiss::kInvalid;  // executing, or unwinding
    if (*depth == kMaxPythonFrames) return put_text("...\t\t0\n", out, end), PythonStackMiss::kNone;
    const void* code = pointer_at(memory, frame, l.frame_code);
    if (!has_type(memory, py, code, py.code_type)) return PythonStackMiss::kInvalid;
    const int lasti = field<Memory, int>(memory, frame, l.frame_instr);
    if (!put_frame(memory, py, code, lasti < 0 ? -1 : lasti * 2, out, end)) return PythonStackMiss::kInvalid;
    ++*depth;
  }
  return PythonStackMiss::kNone;
}

// 3.11+: _PyInterpreterFrames linked by `previous`, in the thread's data stack (or a
// generator's); an instruction pointer into the code's co_code_adaptive.
template <class Memory>
PythonStackMiss walk_interpreter_frames(Memory& memory, const Interpreter& py, const void* frame, char*& out, char* end,
                                        size_t* depth) {
  const PythonLayout& l = *py.layout;
  char last_owner = 0;
  for (size_t seen = 0; frame; frame = pointer_at(memory, frame, l.frame_previous)) {
    if (!plausible(frame) || ++seen > 4 * kMaxPythonFrames) return PythonStackMiss::kInvalid;
    const size_t index = seen - 1;
    last_owner = field<Memory, char>(memory, frame, l.frame_owner);
    // The frame's line, none (skipped) unless one is put; a walk cut at the depth limit leaves
    // the frame it stopped at, and those below, not walked.
    if constexpr (Memory::kCachesCode) {
      if (*depth < kMaxPythonFrames) memory.note_line(index, out, 0);
    }
    const char owner = field<Memory, char>(memory, frame, l.frame_owner);
    if (owner < 0 || owner > max_owner(l)) return PythonStackMiss::kInvalid;
    if (owner >= kOwnedByShim) continue;
    if constexpr (Memory::kCachesCode) {
      // Below the frames that changed since the last walk: their lines, without their code objects.
      bool skipped = false;
      if (*depth < kMaxPythonFrames && memory.reuse_line(index, out, end, &skipped)) {
        if (!skipped) ++*depth;
        continue;
      }
    }
    const void* code = frame_code(memory, l, frame);
    if (!has_type(memory, py, code, py.code_type)) {
      if (l.minor >= 13) continue;  // 3.13+'s f_executable may be another callable's object
      return PythonStackMiss::kInvalid;
    }
    const char* instructions = static_cast<const char*>(code) + l.code_code_adaptive;
    const char* instr = static_cast<const char*>(pointer_at(memory, frame, l.frame_instr));
    const int64_t units = field<Memory, int64_t>(memory, code, l.var_size);  // code objects' ob_size: code units
    if (units <= 0 || units > (int64_t(1) << 24)) return PythonStackMiss::kInvalid;
    const int64_t offset = instr - instructions;  // bytes; -2 before the first instruction (3.11, 3.12)
    if (offset < -2 || offset >= units * 2) return PythonStackMiss::kInvalid;
    // CPython's own rule for a frame that has not run its first traceable instruction yet
    // (_PyFrame_IsIncomplete): not shown in tracebacks, not shown here.
    if (owner != kOwnedByGenerator && offset / 2 < field<Memory, int>(memory, code, l.code_firsttraceable)) continue;
    if (*depth == kMaxPythonFrames) return put_text("...\t\t0\n", out, end), PythonStackMiss::kNone;
    char* const line = out;
    if (!put_frame(memory, py, code, int(offset < 0 ? -1 : offset), out, end)) return PythonStackMiss::kInvalid;
    if constexpr (Memory::kCachesCode) memory.note_line(index, line, size_t(out - line));
    ++*depth;
  }
  // The outermost frame is never a generator's: one is unlinked when it yields, so a chain that
  // ends there was read across a yield (only another thread's can be). From 3.12 it is the
  // interpreter's entry shim (read_chain says why).
  if (last_owner == kOwnedByGenerator) return PythonStackMiss::kChanged;
  if (l.minor >= 12 && last_owner < kOwnedByShim) return PythonStackMiss::kChanged;
  return PythonStackMiss::kNone;
}

// 3.11+: the frames from `frame` down, as (frame, code, instruction) and nothing else read:
// what tells that a stack is the one read last time. False when the chain is not plausible or
// longer than the walk would follow.
bool read_chain(OtherThreadMemory& memory, const PythonLayout& l, const void* frame, PythonReadState::FrameKey* keys,
                size_t* length) {
  size_t n = 0;
  char owner = 0;
  for (; frame; frame = pointer_at(memory, frame, l.frame_previous)) {
    if (!plausible(frame) || n == PythonReadState::kMaxChain) return false;
    if (!memory.in_window(frame)) memory.read_window(frame);  // the next data stack chunk down
    keys[n++] = {frame, frame_code(memory, l, frame), pointer_at(memory, frame, l.frame_instr)};
    owner = field<OtherThreadMemory, char>(memory, frame, l.frame_owner);
  }
  *length = n;
  // A chain that ends at a generator's frame was read while the generator yielded (its frame is
  // unlinked then), and from 3.12 one that ends elsewhere than at the interpreter's entry shim
  // (every entry from C pushes one, the thread's first at the bottom) was read across a push or a
  // pop: torn, not the thread's stack.
  if (l.minor >= 12 && owner < kOwnedByShim) return false;
  return !memory.failed && owner != kOwnedByGenerator;
}

// The walk from a thread state, through `memory`: the frames of `tstate`'s thread.
template <class Memory>
size_t walk_thread(Memory& memory, const Interpreter& py, const void* tstate, unsigned long thread_id, char* text,
                   size_t capacity, PythonStackMiss* miss) {
  const PythonLayout& l = *py.layout;
  if (!plausible(tstate)) return *miss = PythonStackMiss::kInvalid, 0;
  const unsigned long owner = field<Memory, unsigned long>(memory, tstate, l.tstate_thread_id);
  const void* interp = pointer_at(memory, tstate, l.tstate_interp);
  // _PyRuntime is the interpreter's static data, mapped while the process lives (its library is
  // held open): read in place, whoever reads.
  RuntimeMemory runtime;
  const void* main_interp = pointer_at(runtime, py.runtime, l.runtime_main_interp);
  const void* frame = pointer_at(memory, tstate, l.tstate_frame);
  if (memory.failed) return *miss = PythonStackMiss::kUnreadable, 0;
  // A thread state freed and reused for another thread is not this thread's any more.
  if (owner != thread_id) return *miss = PythonStackMiss::kInvalid, 0;
  if (interp != main_interp) return *miss = PythonStackMiss::kSubinterpreter, 0;
  const void* cframe = nullptr;
  if (l.cframe_current_frame >= 0 && frame) {
    if (!plausible(frame)) return *miss = PythonStackMiss::kInvalid, 0;
    cframe = frame;
    frame = pointer_at(memory, cframe, l.cframe_current_frame);
  }
  if (memory.failed) return *miss = PythonStackMiss::kUnreadable, 0;
  if (!frame) return *miss = PythonStackMiss::kNoFrame, 0;
  const void* const top = frame;
  char* out = text;
  char* const end = text + capacity;
  size_t depth = 0;
  PythonStackMiss walked = PythonStackMiss::kNone;
  bool same_as_last = false;
  [[maybe_unused]] PythonReadState::FrameKey keys[PythonReadState::kMaxChain];
  [[maybe_unused]] size_t keys_length = 0;
  if constexpr (Memory::kCachesCode) {
    PythonReadState& state = memory.state();
    if (l.minor >= 11) {  // 3.10's frames are heap objects: neither together nor cheap to key
      memory.read_window(frame);
      if (!read_chain(memory, l, frame, keys, &keys_length)) keys_length = 0;
      same_as_last = keys_length && state.last_length && keys_length == state.chain_length &&
                     std::equal(keys, keys + keys_length, state.chain) && state.last_length <= capacity;
      // The frames the two chains share at their outer end (a step's loop, the calls down to the
      // function that is running) keep their lines; only the ones above are read.
      size_t common = 0;
      if (keys_length && state.last_length) {
        while (common < keys_length && common < state.chain_length &&
               keys[keys_length - 1 - common] == state.chain[state.chain_length - 1 - common])
          ++common;
      }
      state.reusable_from = common ? keys_length - common : PythonReadState::kMaxChain;
      for (size_t i = 0; i < keys_length; ++i) state.walking[i] = {PythonReadState::kNotWalked, 0};
      state.shift = state.chain_length - keys_length;  // wraps when shorter: used only where valid
      state.text = text;
      if (same_as_last) {
        ++state.unchanged;
        memcpy(text, state.last_text, state.last_length);
        out = text + state.last_length;
        depth = 1;
      }
    }
  }
  if (!same_as_last) {
    walked = l.minor == 10 ? walk_frame_objects(memory, py, frame, out, end, &depth)
                           : walk_interpreter_frames(memory, py, frame, out, end, &depth);
  }
  // A failed read is why a check failed, whatever check it was.
  if (memory.failed) return *miss = PythonStackMiss::kUnreadable, 0;
  if (walked != PythonStackMiss::kNone) return *miss = walked, 0;
  if (depth == 0) return *miss = PythonStackMiss::kNoFrame, 0;
  // Another thread may have returned, yielded or called while its frames were read: a generator
  // that yields unlinks its frame, and the walk would end there with a stack that looks whole.
  // Its innermost frame read again must be the one the walk started from (our own thread's
  // cannot change: the same value comes back).
  // A chain the same as the last walk's (read after the innermost frame was) is a stack the
  // thread was in, at most the moment before: nothing was walked that could be torn.
  if (same_as_last) return size_t(out - text);
  // 3.11 and 3.12 keep the innermost frame in the _PyCFrame of the C-level entry that runs it:
  // read again there (one read). Had the thread entered Python again from C meanwhile, that
  // cframe would still say `top` while newer frames ran above it: the stack read is then the one
  // of a moment ago, whole, not a torn one.
  const void* now = nullptr;
  const char* at = cframe ? static_cast<const char*>(cframe) + l.cframe_current_frame
                          : static_cast<const char*>(tstate) + l.tstate_frame;
  if (!memory.read_again(at, &now, sizeof now)) return *miss = PythonStackMiss::kUnreadable, 0;
  if (now != top) return *miss = PythonStackMiss::kChanged, 0;
  if constexpr (Memory::kCachesCode) {
    PythonReadState& state = memory.state();
    if (!same_as_last && keys_length && size_t(out - text) <= sizeof state.last_text) {
      std::copy(keys, keys + keys_length, state.chain);
      std::copy(state.walking, state.walking + keys_length, state.spans);
      state.chain_length = keys_length;
      state.last_length = size_t(out - text);
      memcpy(state.last_text, text, state.last_length);
    } else if (!same_as_last) {
      state.last_length = 0;  // nothing to reuse from a walk whose chain or text was not kept
    }
  }
  return size_t(out - text);
}

// The calling thread's own thread state (null: none), read from the interpreter's pthread key.
const void* own_thread_state(const Interpreter& py, PythonStackMiss* miss) {
  const PythonLayout& l = *py.layout;
  RuntimeMemory own;
  const char* tss = py.runtime + l.runtime_tss;
  if (field<RuntimeMemory, int>(own, tss, l.tss_initialized) != 1) return *miss = PythonStackMiss::kNotPythonThread, nullptr;
  const pthread_key_t key = field<RuntimeMemory, pthread_key_t>(own, tss, l.tss_key);
  // The key is created before any thread state and never deleted while the interpreter lives;
  // pthread_getspecific of any key value is defined, and only this thread's slot is read.
  const void* tstate = key < PTHREAD_KEYS_MAX ? pthread_getspecific(key) : nullptr;
  if (!tstate) return *miss = PythonStackMiss::kNotPythonThread, nullptr;
  return tstate;
}

}  // namespace

size_t capture_python_stack(char* text, size_t capacity, PythonStackMiss* miss) {
  *miss = PythonStackMiss::kNone;
  const Interpreter* py = interpreter(miss);
  if (!py) return 0;
  const void* tstate = own_thread_state(*py, miss);
  if (!tstate) return 0;
  OwnMemory own;
  return walk_thread(own, *py, tstate, static_cast<unsigned long>(pthread_self()), text, capacity, miss);
}

const void* current_python_thread_state() {
  PythonStackMiss miss;
  const Interpreter* py = interpreter(&miss);
  return py ? own_thread_state(*py, &miss) : nullptr;
}

PythonReadState* new_python_read_state() { return new PythonReadState; }
void delete_python_read_state(PythonReadState* state) { delete state; }
uint64_t python_read_state_unchanged(const PythonReadState* state) { return state->unchanged; }
uint64_t python_read_state_reads(const PythonReadState* state) { return state->syscalls; }

size_t capture_other_thread_python_stack(PythonReadState* state, const void* tstate, unsigned long thread_id,
                                         char* text, size_t capacity, PythonStackMiss* miss, int* read_error) {
  *miss = PythonStackMiss::kNone;
  *read_error = 0;
  const Interpreter* py = interpreter(miss);
  if (!py) return 0;
  OtherThreadMemory memory(*state);
  const size_t length = walk_thread(memory, *py, tstate, thread_id, text, capacity, miss);
  *read_error = memory.error;
  return length;
}

int python_minor_found() {
  const Interpreter* found = g_found.load(std::memory_order_acquire);
  return found ? found->minor : 0;
}

}  // namespace gapwatch
