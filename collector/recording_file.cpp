// collector/recording_file.cpp: see recording_file.h.
#include "collector/recording_file.h"

#include <gapwatch/recording_format.h>
#include <gapwatch/recording_name.h>
#include <gapwatch/write_all.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

namespace gapwatch::collector {
namespace {

constexpr int kMaxSuffix = 10000;

}  // namespace

std::string recordingBaseName(const std::string& host, uint32_t pid, std::optional<int32_t> rank) {
  return collectorRecordingBaseName(host, pid, rank.has_value(), rank.value_or(0));
}

int createRecordingFile(int dir_fd, const std::string& base, std::string* name, std::string* error) {
  for (int suffix = 0; suffix < kMaxSuffix; ++suffix) {
    std::string candidate = base + (suffix ? "-" + std::to_string(suffix) : std::string()) + ".gwt";
    int fd = ::openat(dir_fd, candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EINTR) {
      --suffix;
      continue;
    }
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      *error = "cannot create " + candidate + ": " + strerror(errno);
      return -1;
    }
    unsigned char header[kFileHeaderBytes];
    memcpy(header, kFileMagic, sizeof kFileMagic);
    for (int i = 0; i < 4; ++i) header[sizeof kFileMagic + i] = (kFileFormatVersion >> (8 * i)) & 0xff;
    if (!gapwatch::write_all(fd, header, sizeof header)) {
      *error = "cannot write " + candidate + ": " + strerror(errno);
      ::close(fd);
      return -1;
    }
    *name = candidate;
    return fd;
  }
  *error = "cannot create " + base + ".gwt: " + std::to_string(kMaxSuffix) + " files of that name exist";
  return -1;
}

}  // namespace gapwatch::collector
