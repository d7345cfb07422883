// reader/recording_parts.cpp: see recording_parts.h.
#include "reader/recording_parts.h"

#include "reader/kineto_trace.h"
#include "reader/recording_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace gapwatch {
namespace {

using ProcessKey = std::tuple<std::string, uint32_t, bool, int32_t, uint64_t, uint64_t, uint64_t>;

// What a part's place among its process's parts depends on: its Hello, and the sequence number of
// its first batch. Reading stops there, so a long recording costs one read of its first MiB.
struct PartHead {
  std::optional<ProcessKey> key;
  bool has_batch = false;
  uint64_t first_sequence = 0;
  std::pair<uint64_t, uint64_t> inode{0, 0};  // (device, inode): the same file given twice
};

class HeadReader final : public FrameSink {
 public:
  explicit HeadReader(PartHead& head) : head_(head) {}

  std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t /*offset*/) override {
    if (frame.has_hello() && !seen_hello_) {
      seen_hello_ = true;
      const v1::Hello& h = frame.hello();
      // A trace's Hello (imported) has no process start, and a recording without a pid or a start
      // cannot be told from another's.
      if (h.source() != v1::STREAM_SOURCE_KINETO_TRACE && h.pid() != 0 && h.start_time_ns() != 0) {
        head_.key = ProcessKey{h.host(),          h.pid(),          h.has_rank(),      h.has_rank() ? h.rank() : 0,
                               h.start_time_ns(), h.process_start_ns(), h.start_unix_ns()};
      }
      return std::nullopt;
    }
    if (frame.has_batch()) {
      head_.has_batch = true;
      head_.first_sequence = frame.batch().sequence();
      return ReadError{ReadErrorKind::kCorrupt, "enough read", 0};  // stops the read here
    }
    return std::nullopt;
  }

 private:
  PartHead& head_;
  bool seen_hello_ = false;
};

PartHead readHead(const std::string& file) {
  PartHead head;
  if (fileLooksLikeKinetoTrace(file)) return head;
  HeadReader reader(head);
  readRecordingFile(file, reader);
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) head.inode = {uint64_t(st.st_dev), uint64_t(st.st_ino)};
  return head;
}

uint64_t fileSize(const std::string& file) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

}  // namespace

std::vector<std::vector<std::size_t>> groupRecordingParts(const std::vector<std::string>& files) {
  std::vector<PartHead> heads;
  heads.reserve(files.size());
  for (const std::string& file : files) heads.push_back(readHead(file));
  std::vector<std::vector<std::size_t>> groups;
  std::map<ProcessKey, std::size_t> group_of;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!heads[i].key) {
      groups.push_back({i});
      continue;
    }
    auto [it, added] = group_of.emplace(*heads[i].key, groups.size());
    if (added) groups.emplace_back();
    std::vector<std::size_t>& group = groups[it->second];
    // A file given twice is read twice, as asked (two jobs of the same ranks, say), not as a part.
    if (std::any_of(group.begin(), group.end(), [&](std::size_t j) { return heads[j].inode == heads[i].inode; })) {
      groups.push_back({i});
      continue;
    }
    group.push_back(i);
  }
  // The collector's part holds the stream from its first batch, the library's file from the first
  // one the collector had not acknowledged (both from 0 when it acknowledged none: then the smaller
  // first, a prefix of the other). A part without batches holds only the stream's end.
  for (std::vector<std::size_t>& group : groups) {
    if (group.size() < 2) continue;
    // The name last, so that the order does not depend on the order the files were given in.
    std::vector<std::tuple<bool, uint64_t, uint64_t, std::string, std::size_t>> order;
    for (std::size_t i : group)
      order.emplace_back(!heads[i].has_batch, heads[i].first_sequence, fileSize(files[i]), files[i], i);
    std::sort(order.begin(), order.end());
    for (std::size_t k = 0; k < group.size(); ++k) group[k] = std::get<4>(order[k]);
  }
  return groups;
}

}  // namespace gapwatch
