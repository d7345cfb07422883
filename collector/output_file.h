// collector/output_file.h: writes a report into the collector's output directory without ever
// following a link planted there.
//
// The content goes to a new temporary file (O_CREAT|O_EXCL|O_NOFOLLOW, relative to the directory's
// fd) that is then renamed over the name: rename replaces a symlink at that name rather than
// writing through it, and a reader sees the old report or the new one, never half of one.
#pragma once

#include <string>

namespace gapwatch::collector {

// False with *error set when it could not (the temporary file is removed).
bool replaceOutputFile(int dir_fd, const std::string& name, const std::string& content, std::string* error);

}  // namespace gapwatch::collector
