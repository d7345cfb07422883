#include "python_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <mutex>

#include "python_layout.h"
#include "python_line_table.h"

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
};

Interpreter g_interpreter;
std::atomic<const Interpreter*> g_found{nullptr};
std::atomic<bool> g_unsupported{false};  // found, but a version without a layout
std::atomic<int64_t> g_next_lookup_ns{0};
std::mutex g_lookup_mu;  // only the lookup takes it

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// 3.X from a file name holding "python3.X" ("libpython3.10.so.1.0", "/usr/bin/python3.11"), else 0.
int minor_from_name(const char* path) {
  for (const char* p = path ? strstr(path, "python3.") : nullptr; p; p = strstr(p + 1, "python3.")) {
    const char* digits = p + 8;
    if (*digits < '0' || *digits > '9') continue;
    return atoi(digits);
  }
  return 0;
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
// plugin). Returns whether one was found, supported or not.
bool look_up(Interpreter* out) {
  void* scope = RTLD_DEFAULT;
  void* handle = nullptr;
  void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  if (!runtime) {
    LibpythonSearch search{};
    if (!dl_iterate_phdr(find_libpython, &search)) return false;
    // RTLD_NOLOAD: only a reference to what is already there; never loads anything.
    handle = dlopen(search.path, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return false;
    scope = handle;
    runtime = dlsym(handle, "_PyRuntime");
    if (!runtime) return dlclose(handle), false;
  }
  int minor = 0;
  if (auto* hex = static_cast<const unsigned long*>(dlsym(scope, "Py_Version"))) {
    if ((*hex >> 24) == 3) minor = int((*hex >> 16) & 0xff);
  } else {
    Dl_info info{};
    if (dladdr(runtime, &info)) minor = minor_from_name(info.dli_fname);
  }
  out->minor = minor;
  out->runtime = static_cast<const char*>(runtime);
  out->layout = python_layout_for(minor);
  out->code_type = dlsym(scope, "PyCode_Type");
  out->unicode_type = dlsym(scope, "PyUnicode_Type");
  out->bytes_type = dlsym(scope, "PyBytes_Type");
  out->frame_type = dlsym(scope, "PyFrame_Type");
  if (!out->code_type || !out->unicode_type || !out->bytes_type || (minor == 10 && !out->frame_type))
    out->layout = nullptr;
  // The handle stays open on purpose: the interpreter's memory must outlive every later read
  // (the library is never unloaded while its frames run, but a plugin's dlclose could be).
  return true;
}

const Interpreter* interpreter(PythonStackMiss* miss) {
  if (const Interpreter* found = g_found.load(std::memory_order_acquire)) return found;
  if (g_unsupported.load(std::memory_order_relaxed)) return *miss = PythonStackMiss::kUnknownVersion, nullptr;
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
    g_unsupported.store(true, std::memory_order_relaxed);
    return *miss = PythonStackMiss::kUnknownVersion, nullptr;
  }
  g_interpreter = candidate;
  g_found.store(&g_interpreter, std::memory_order_release);
  return &g_interpreter;
}

// ---- reading memory the checks have vouched for ----------------------------------------------

// A pointer that could be a heap or static object's: non-null, aligned, in the user half of the
// x86-64 address space, above the first page. It does not prove the memory is mapped; the type
// checks that follow every such read make a wrong layout fail closed.
bool plausible(const void* p, uintptr_t align = 8) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return v >= 4096 && v < (uintptr_t(1) << 47) && (v & (align - 1)) == 0;
}

template <class T>
T field(const void* base, int32_t offset) {
  T value;
  memcpy(&value, static_cast<const char*>(base) + offset, sizeof value);
  return value;
}

const void* pointer_at(const void* base, int32_t offset) { return field<const void*>(base, offset); }

bool has_type(const Interpreter& py, const void* object, const void* type) {
  return plausible(object) && pointer_at(object, py.layout->object_type) == type;
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
bool copy_str(const Interpreter& py, const void* object, size_t limit, bool keep_tail, char*& out, char* end) {
  const PythonLayout& l = *py.layout;
  if (!has_type(py, object, py.unicode_type)) return false;
  const int64_t length = field<int64_t>(object, l.unicode_length);
  if (length < 0 || length > (int64_t(1) << 20)) return false;
  const uint32_t state = field<uint32_t>(object, l.unicode_state);
  if (!(state & l.state_compact_mask)) return false;  // code objects' names are always compact
  const bool ascii = state & l.state_ascii_mask;
  const uint32_t kind = ascii ? 1 : (state >> l.state_kind_shift) & 7;
  if (kind != 1 && kind != 2 && kind != 4) return false;
  const char* data = static_cast<const char*>(object) + (ascii ? l.unicode_ascii_size : l.unicode_compact_size);
  int64_t first = 0, count = length;
  if (count > int64_t(limit)) {
    if (keep_tail) first = count - int64_t(limit);
    count = int64_t(limit);
  }
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
    if (kind == 1) c = static_cast<unsigned char>(data[i]);
    else if (kind == 2) c = field<uint16_t>(data, int32_t(i * 2));
    else c = field<uint32_t>(data, int32_t(i * 4));
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

// One frame's line: "function\tfile\tline\n". False when its code object fails a check.
bool put_frame(const Interpreter& py, const void* code, int byte_offset, char*& out, char* end) {
  const PythonLayout& l = *py.layout;
  const void* linetable = pointer_at(code, l.code_linetable);
  if (!has_type(py, linetable, py.bytes_type)) return false;
  const int64_t table_len = field<int64_t>(linetable, l.var_size);
  if (table_len < 0 || table_len > (int64_t(1) << 24)) return false;
  const int firstlineno = field<int>(code, l.code_firstlineno);
  int line = byte_offset < 0 ? firstlineno
                             : python_line_at(l.minor, reinterpret_cast<const uint8_t*>(linetable) + l.bytes_data,
                                              size_t(table_len), firstlineno, byte_offset);
  if (line < 0) line = 0;
  const void* name = pointer_at(code, l.code_qualname >= 0 ? l.code_qualname : l.code_name);
  if (!copy_str(py, name, 120, false, out, end) || !put_text("\t", out, end)) return false;
  if (!copy_str(py, pointer_at(code, l.code_filename), 240, true, out, end)) return false;
  char number[16];
  snprintf(number, sizeof number, "\t%d\n", line);
  return put_text(number, out, end);
}

// Owners of a _PyInterpreterFrame (3.11+).
constexpr char kOwnedByGenerator = 1;
constexpr char kOwnedByCStack = 3;  // 3.12+: the interpreter's entry shim, not user code

// 3.10: frames are PyFrameObjects linked by f_back; f_lasti counts code units.
PythonStackMiss walk_frame_objects(const Interpreter& py, const void* frame, char*& out, char* end, size_t* depth) {
  const PythonLayout& l = *py.layout;
  for (; frame; frame = pointer_at(frame, l.frame_previous)) {
    if (!has_type(py, frame, py.frame_type)) return PythonStackMiss::kInvalid;
    const signed char state = field<signed char>(frame, l.frame_state);
    if (state != 0 && state != 2) return PythonStackMiss::kInvalid;  // executing, or unwinding
    if (*depth == kMaxPythonFrames) return put_text("...\t\t0\n", out, end), PythonStackMiss::kNone;
    const void* code = pointer_at(frame, l.frame_code);
    if (!has_type(py, code, py.code_type)) return PythonStackMiss::kInvalid;
    const int lasti = field<int>(frame, l.frame_instr);
    if (!put_frame(py, code, lasti < 0 ? -1 : lasti * 2, out, end)) return PythonStackMiss::kInvalid;
    ++*depth;
  }
  return PythonStackMiss::kNone;
}

// 3.11+: _PyInterpreterFrames linked by `previous`, in the thread's data stack (or a
// generator's); an instruction pointer into the code's co_code_adaptive.
PythonStackMiss walk_interpreter_frames(const Interpreter& py, const void* frame, char*& out, char* end, size_t* depth) {
  const PythonLayout& l = *py.layout;
  for (size_t seen = 0; frame; frame = pointer_at(frame, l.frame_previous)) {
    if (!plausible(frame) || ++seen > 4 * kMaxPythonFrames) return PythonStackMiss::kInvalid;
    const char owner = field<char>(frame, l.frame_owner);
    if (owner < 0 || owner > kOwnedByCStack) return PythonStackMiss::kInvalid;
    if (owner == kOwnedByCStack) continue;
    const void* code = pointer_at(frame, l.frame_code);
    if (!has_type(py, code, py.code_type)) {
      if (l.minor >= 13) continue;  // 3.13's f_executable may be another callable's object
      return PythonStackMiss::kInvalid;
    }
    const char* instructions = static_cast<const char*>(code) + l.code_code_adaptive;
    const char* instr = static_cast<const char*>(pointer_at(frame, l.frame_instr));
    const int64_t units = field<int64_t>(code, l.var_size);  // code objects' ob_size: code units
    if (units <= 0 || units > (int64_t(1) << 24)) return PythonStackMiss::kInvalid;
    const int64_t offset = instr - instructions;  // bytes; -2 before the first instruction (3.11, 3.12)
    if (offset < -2 || offset >= units * 2) return PythonStackMiss::kInvalid;
    // CPython's own rule for a frame that has not run its first traceable instruction yet
    // (_PyFrame_IsIncomplete): not shown in tracebacks, not shown here.
    if (owner != kOwnedByGenerator && offset / 2 < field<int>(code, l.code_firsttraceable)) continue;
    if (*depth == kMaxPythonFrames) return put_text("...\t\t0\n", out, end), PythonStackMiss::kNone;
    if (!put_frame(py, code, int(offset < 0 ? -1 : offset), out, end)) return PythonStackMiss::kInvalid;
    ++*depth;
  }
  return PythonStackMiss::kNone;
}

}  // namespace

size_t capture_python_stack(char* text, size_t capacity, PythonStackMiss* miss) {
  *miss = PythonStackMiss::kNone;
  const Interpreter* py = interpreter(miss);
  if (!py) return 0;
  const PythonLayout& l = *py->layout;
  const char* tss = py->runtime + l.runtime_tss;
  if (field<int>(tss, l.tss_initialized) != 1) return *miss = PythonStackMiss::kNotPythonThread, 0;
  const pthread_key_t key = field<pthread_key_t>(tss, l.tss_key);
  // The key is created before any thread state and never deleted while the interpreter lives;
  // pthread_getspecific of any key value is defined, and only this thread's slot is read.
  const void* tstate = key < PTHREAD_KEYS_MAX ? pthread_getspecific(key) : nullptr;
  if (!tstate) return *miss = PythonStackMiss::kNotPythonThread, 0;
  if (!plausible(tstate)) return *miss = PythonStackMiss::kInvalid, 0;
  if (field<unsigned long>(tstate, l.tstate_thread_id) != static_cast<unsigned long>(pthread_self()))
    return *miss = PythonStackMiss::kInvalid, 0;
  if (pointer_at(tstate, l.tstate_interp) != pointer_at(py->runtime, l.runtime_main_interp))
    return *miss = PythonStackMiss::kSubinterpreter, 0;
  const void* frame = pointer_at(tstate, l.tstate_frame);
  if (l.cframe_current_frame >= 0 && frame) {
    if (!plausible(frame)) return *miss = PythonStackMiss::kInvalid, 0;
    frame = pointer_at(frame, l.cframe_current_frame);
  }
  if (!frame) return *miss = PythonStackMiss::kNoFrame, 0;
  char* out = text;
  char* const end = text + capacity;
  size_t depth = 0;
  const PythonStackMiss walked = l.minor == 10 ? walk_frame_objects(*py, frame, out, end, &depth)
                                               : walk_interpreter_frames(*py, frame, out, end, &depth);
  if (walked != PythonStackMiss::kNone) return *miss = walked, 0;
  if (depth == 0) return *miss = PythonStackMiss::kNoFrame, 0;
  return size_t(out - text);
}

int python_minor_found() {
  const Interpreter* found = g_found.load(std::memory_order_acquire);
  return found ? found->minor : 0;
}

}  // namespace gapwatch
