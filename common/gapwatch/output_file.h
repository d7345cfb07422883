// gapwatch/output_file.h (common/): how gapwatch puts a finished file in place: the reports the
// collector writes into its output directory, the HTML report, and a recording `gapwatch import`
// writes (tools/gwt_file_writer.cpp). One helper for every writer, in common/ because the collector
// and the tools both use it.
//
// The content goes to a new temporary file beside the name (O_CREAT|O_EXCL|O_NOFOLLOW, relative to
// the directory's fd), which is then renamed over the name: rename replaces a symlink at that name
// rather than writing through it, and a reader sees the old file or the new one, never half of
// one. Durable too (issue 21, item 9): the file's content is fsync'ed before the rename and the
// directory after it, so that after a crash, of the machine included, the name holds the old
// content or the whole new one, never a file of the right name that is empty or cut short.
#pragma once

#include <string>

namespace gapwatch {

// Writes `content` as `name` in `dir_fd` (see above). False with *error set when it could not
// (the temporary file is removed).
bool replaceOutputFile(int dir_fd, const std::string& name, const std::string& content, std::string* error);

// The last step, for a writer that made its temporary file itself: fsync(file_fd), renameat2 of
// `temporary` to `name` (both in dir_fd) with `rename_flags` (0 or RENAME_NOREPLACE), fsync(dir_fd).
// file_fd stays open. Returns 0, or the errno of the step that failed; the temporary is left to
// the caller.
int commitTemporaryFile(int file_fd, int dir_fd, const std::string& temporary, const std::string& name,
                        unsigned rename_flags);

// Whether a file can be written at `path`, checked before any work is done (a report is not
// printed, a trace not read, only to fail at the end): its directory exists and is a directory,
// and `path` names a file in it, not a directory. False with *error set ("no such directory:
// out"). It does not create anything.
bool checkOutputPath(const std::string& path, std::string* error);

// An output streamed to a temporary file beside `path` and put in place only whole (commit()),
// by the same rename as replaceOutputFile: a writer that fails, or a process that dies, leaves
// nothing at `path` (and the temporary is removed, unless the process died). For outputs too large
// to hold in memory: exports, an imported recording.
class PendingOutputFile {
 public:
  PendingOutputFile() = default;
  ~PendingOutputFile() { abandon(); }
  PendingOutputFile(const PendingOutputFile&) = delete;
  PendingOutputFile& operator=(const PendingOutputFile&) = delete;

  // Makes the temporary file; false with *error set.
  bool open(const std::string& path, std::string* error);
  // The temporary file's descriptor (-1 before open()), which the writer writes to.
  int fd() const { return fd_; }
  // Renames the temporary over `path` (after an fsync when `durable`) and closes it; false with
  // *error set, the temporary removed.
  bool commit(bool durable, std::string* error);
  // Removes the temporary; nothing is at `path` that was not there before.
  void abandon();

 private:
  int dir_fd_ = -1;
  int fd_ = -1;
  std::string name_, temporary_;
};

}  // namespace gapwatch
