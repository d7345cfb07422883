// collector/recording_file.h: names and creates the .gwt a connection's stream goes to.
//
// The name comes from the stream (host, pid, rank), so it is untrusted: only [A-Za-z0-9._-] are
// kept, the host is bounded, and the file is created with O_CREAT|O_EXCL|O_NOFOLLOW in the output
// directory, so an existing file or a planted symlink is never opened; a clash gets a suffix.
#pragma once


#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gapwatch::collector {

// "gapwatch-<host>-<pid>[-rank<r>]" with the host sanitised (empty: "unknown-host").
std::string recordingBaseName(const std::string& host, uint32_t pid, std::optional<int32_t> rank);

// Creates <base>.gwt, else <base>-1.gwt, <base>-2.gwt, ... in `dir_fd` and writes the file header.
// Returns the fd (name in *name), or -1 with *error set.
int createRecordingFile(int dir_fd, const std::string& base, std::string* name, std::string* error);


}  // namespace gapwatch::collector
