// process_info.h: who this process is, for the recording's Hello: pid, host, rank, command line,
// when it started. Read once, when recording starts.
#pragma once

#include "frame_encoder.h"

namespace gapwatch {

uint64_t monotonic_ns();  // CLOCK_MONOTONIC through the vDSO: no system call
void fill_process_info(HelloInfo* hello);
// The default recording name: gapwatch-<host>-<pid>.gwt, with the host sanitised for a file name.
std::string default_output_name();

}  // namespace gapwatch
