#include "readable_ranges.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace gapwatch {
namespace {

struct Range {
  uintptr_t start, end;
};

// Two copies of the mappings, sorted and merged: walks read the current one while a re-read fills
// the other, which then becomes current. A copy is filled only when no walk holds it (its count is
// 0: walks that began before the last switch, which take microseconds); a walk holds the copy it
// began with to its end. So walks never wait for a re-read, and a re-read waits only for the walks
// of a copy that stopped being current. Each array is mapped at the first read (1 MiB of address
// space, touched as far as it is filled): a process with more readable mappings than it holds has
// the rest unknown, so objects there are misses.
constexpr size_t kMaxRanges = 65536;
struct Copy {
  Range* ranges = nullptr;
  size_t count = 0;
  std::atomic<int> walks{0};
};
Copy g_copies[2];
std::atomic<int> g_current{0};
std::mutex g_reread_mu;  // one re-read at a time (try_lock: a walk never waits for another's re-read)
// The interpreter object's segments: written once by note_interpreter_image, before the interpreter
// is published to any walk (python_stack.cpp's g_found, release/acquire), never after.
constexpr size_t kMaxImageRanges = 16;
Range g_image[kMaxImageRanges];
size_t g_image_count = 0;
std::atomic<uint64_t> g_rereads{0};
// Re-reads are paced by the time they take: each adds 100 times its own duration to a debt that
// must be under 100 ms for the next to start. So re-reading costs at most about 1% of the time a
// process runs, a new thread's malloc arena or a new pymalloc arena is found at once (the first walk
// that meets it re-reads), and a pointer to nowhere met at every walk cannot turn into a re-read at
// every walk. Under g_reread_mu.
constexpr int64_t kDebtFactor = 100;
constexpr int64_t kDebtAllowed = 100 * 1000 * 1000;
int64_t g_debt_until_ns = 0;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool parse_hex(const char*& p, const char* end, uintptr_t* value) {
  uintptr_t v = 0;
  const char* start = p;
  for (; p < end; ++p) {
    const char c = *p;
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) break;
    v = v * 16 + uintptr_t(digit);
  }
  *value = v;
  return p > start;
}

// One line of /proc/self/maps: "start-end perms offset dev inode [path]". Kept: readable, and
// anonymous ([heap], [stack], a named [anon:...] or no path at all).
bool readable_anonymous(const char* line, const char* end, Range* range) {
  const char* p = line;
  if (!parse_hex(p, end, &range->start) || p == end || *p++ != '-' || !parse_hex(p, end, &range->end)) return false;
  if (end - p < 5 || p[0] != ' ' || p[1] != 'r') return false;
  for (int field = 0; field < 4 && p < end; ++field) {  // to the end of the inode field
    while (p < end && *p == ' ') ++p;
    while (p < end && *p != ' ') ++p;
  }
  while (p < end && *p == ' ') ++p;
  const size_t length = size_t(end - p);
  if (length == 0) return true;
  auto is = [&](const char* name) { return length >= strlen(name) && !memcmp(p, name, strlen(name)); };
  return is("[heap]") || is("[stack") || is("[anon:");
}

void add(Copy& c, Range r) {
  if (c.count && c.ranges[c.count - 1].end == r.start) {
    c.ranges[c.count - 1].end = r.end;
  } else if (c.count < kMaxRanges) {
    c.ranges[c.count++] = r;
  }
}

// Under g_reread_mu: /proc/self/maps read into `c` (held by no walk), through a static buffer.
void read_maps(Copy& c) {
  g_rereads.fetch_add(1, std::memory_order_relaxed);
  c.count = 0;
  if (!c.ranges) {
    void* p = mmap(nullptr, kMaxRanges * sizeof(Range), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    c.ranges = static_cast<Range*>(p);
  }
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  static char buffer[64 * 1024];
  size_t held = 0;  // bytes of an unfinished line at the buffer's start
  for (;;) {
    const ssize_t got = read(fd, buffer + held, sizeof buffer - held);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    const char* end = buffer + held + got;
    const char* line = buffer;
    for (const char* nl; (nl = static_cast<const char*>(memchr(line, '\n', size_t(end - line)))); line = nl + 1) {
      Range r;
      if (readable_anonymous(line, nl, &r) && r.end > r.start) add(c, r);
    }
    held = size_t(end - line);
    if (held == sizeof buffer) held = 0;  // a line longer than the buffer: skipped
    memmove(buffer, line, held);
  }
  close(fd);
}

// Under g_reread_mu: the copy that is not current, filled once the walks that still hold it are
// done (at most a millisecond: a forked child can inherit a count from a thread it does not have),
// then made current. False when it could not be.
bool reread_locked() {
  const int next = 1 - g_current.load(std::memory_order_acquire);
  Copy& c = g_copies[next];
  const int64_t give_up = now_ns() + 1000 * 1000;
  while (c.walks.load(std::memory_order_acquire) != 0) {
    if (now_ns() > give_up) return false;
    sched_yield();
  }
  read_maps(c);
  g_current.store(next, std::memory_order_release);
  return true;
}

int add_image_segments(dl_phdr_info* info, size_t, void* data) {
  const uintptr_t inside = reinterpret_cast<uintptr_t>(data);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum && !holds; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    holds = ph.p_type == PT_LOAD && inside >= start && inside < start + ph.p_memsz;
  }
  if (!holds) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_image_count < kMaxImageRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    g_image[g_image_count++] = {start, start + ph.p_memsz};
  }
  return 1;
}

}  // namespace

void note_interpreter_image(const void* address_inside) {
  std::lock_guard<std::mutex> lock(g_reread_mu);
  g_image_count = 0;
  dl_iterate_phdr(add_image_segments, const_cast<void*>(address_inside));
  reread_locked();
}

ReadableRangesView::ReadableRangesView() { hold(); }
ReadableRangesView::~ReadableRangesView() { g_copies[held_].walks.fetch_sub(1, std::memory_order_release); }

// Holds the current copy: counted first, then checked still current (a re-read that switched in
// between may be filling it: counted again on the new current one).
void ReadableRangesView::hold() {
  for (;;) {
    const int i = g_current.load(std::memory_order_acquire);
    g_copies[i].walks.fetch_add(1, std::memory_order_acq_rel);
    if (g_current.load(std::memory_order_acquire) == i) {
      held_ = i;
      return;
    }
    g_copies[i].walks.fetch_sub(1, std::memory_order_release);
  }
}

bool ReadableRangesView::find(uintptr_t start, uintptr_t end) {
  auto keep = [this](uintptr_t s, uintptr_t e) {
    for (size_t i = kKept - 1; i > 0; --i) kept_[i] = kept_[i - 1];
    kept_[0] = {s, e};
  };
  for (size_t i = 0; i < g_image_count; ++i) {
    if (start >= g_image[i].start && end <= g_image[i].end) {
      keep(g_image[i].start, g_image[i].end);
      return true;
    }
  }
  const Copy& c = g_copies[held_];
  if (!c.ranges) return false;
  const Range* first = c.ranges;
  const Range* last = c.ranges + c.count;
  // The first range that ends after `start`: the only one that can hold it.
  const Range* r = std::upper_bound(first, last, start, [](uintptr_t a, const Range& x) { return a < x.end; });
  if (r == last || start < r->start || end > r->end) return false;
  keep(r->start, r->end);
  return true;
}

bool ReadableRangesView::covers_slow(uintptr_t start, uintptr_t end) {
  if (end < start) return false;
  if (find(start, end)) return true;
  if (reread_) return false;
  reread_ = true;
  // Let go of the copy for the re-read (it may be the one that gets filled next time), and hold the
  // current one after it. kept_ stays: it describes memory mapped a moment ago, as a range read
  // again would.
  // Another thread's re-read in progress (several walks meet a new arena at once) is waited for,
  // up to a millisecond, and taken as this walk's own.
  g_copies[held_].walks.fetch_sub(1, std::memory_order_release);
  const uint64_t seen = g_rereads.load(std::memory_order_acquire);
  const int64_t give_up = now_ns() + 1000 * 1000;
  bool locked = g_reread_mu.try_lock();
  while (!locked && now_ns() < give_up) sched_yield(), locked = g_reread_mu.try_lock();
  if (locked) {
    const int64_t now = now_ns();
    if (g_rereads.load(std::memory_order_acquire) == seen && g_debt_until_ns - now < kDebtAllowed && reread_locked())
      g_debt_until_ns = std::max(g_debt_until_ns, now) + kDebtFactor * (now_ns() - now);
    g_reread_mu.unlock();
  }
  hold();
  return find(start, end);
}

size_t readable_range_count() {
  ReadableRangesView view;
  return g_copies[view.held_].count + g_image_count;
}
uint64_t readable_range_rereads() { return g_rereads.load(std::memory_order_relaxed); }

}  // namespace gapwatch
