// tools/file_outcome.cpp: see file_outcome.h.
#include "tools/file_outcome.h"

#include "tools/exit_codes.h"
#include "tools/text_format.h"

namespace gapwatch::cli {

int printReadOutcome(std::string_view name, const ReadResult& result, std::ostream& err) {
  const std::string shown_name = printable(name);
  if (result.error) {
    err << shown_name << ": " << result.error->message << '\n';
    return kExitBadRecording;
  }
  if (result.summary.truncated) {
    err << shown_name << ": note: " << truncationNotice(result.summary) << '\n';
  }
  return kExitOk;
}

}  // namespace gapwatch::cli
