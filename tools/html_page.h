// tools/html_page.h: what every HTML page gapwatch writes shares (report_html.h, diff_html.h): the
// document's head with its one inline style sheet, its end, and the escaping of untrusted text.
//
// Pages are self-contained: no script, no font, nothing fetched (docs/usage.md, "The HTML
// report"), so that they read offline, mailed, archived and printed.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace gapwatch::cli {

// Untrusted text (a recorded kernel name, a path) as HTML text or an attribute value: control
// characters escaped as the text report escapes them (printable()), then & < > " '.
std::string htmlText(std::string_view text);

// <!DOCTYPE html> up to <body>, with `title` (trusted) and the shared style sheet.
void writeHtmlHead(std::ostream& out, std::string_view title);
// A coordinate or length in an inline SVG, to a tenth of a unit: "12.3".
std::string svgNumber(double x);
void writeHtmlTail(std::ostream& out);

// Writes `content` to `path`, whole or not at all (gapwatch/output_file.h: a temporary file
// renamed into place, synced). False, with one line on `err` that begins with `who`, when it cannot.
// Whether an output file can be written at `path` (gapwatch/output_file.h, checkOutputPath),
// checked before any work: else one line "WHO PATH: why" on err and false.
bool outputPathUsable(const std::string& path, std::string_view who, std::ostream& err);

bool writeWholeFile(const std::string& path, const std::string& content, std::string_view who, std::ostream& err);

}  // namespace gapwatch::cli
