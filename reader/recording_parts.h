// reader/recording_parts.h: which of the files given are parts of one process's recording.
//
// When the collector goes away, the injected library writes the rest of the process's stream to a
// file of its own: a copy of the Hello, then every frame the collector had not acknowledged
// (docs/recording-format.md, "Receipts"). The collector's recording and that file are then one
// process in two files, and every reader (report, diff, export, the Python API) reads them as one:
// one stream, the later part after the earlier, a batch both hold read once
// (StreamDecoder::beginPart). Parts are told by their Hello: the same host, pid, rank and start
// (its start_time_ns, process_start_ns and start_unix_ns), from the recorder (a trace imported
// twice is two processes). Nothing else is compared, and a file whose Hello cannot be read is a
// process of its own (its read then says what is wrong), as is a file given again (the same
// device and inode: the same ranks given twice make two jobs, as they always did).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gapwatch {

// The files grouped into processes: each group the indices into `files` of one process's parts,
// in the order to read them (by the sequence number of their first batch; a part without batches,
// which holds only the end of the stream, last); groups in the order of their first file.
std::vector<std::vector<std::size_t>> groupRecordingParts(const std::vector<std::string>& files);

}  // namespace gapwatch
