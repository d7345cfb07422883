// tools/html_page.cpp: see html_page.h.
#include "tools/html_page.h"

#include <gapwatch/output_file.h>
#include "tools/text_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

namespace gapwatch::cli {
namespace {

constexpr const char* kStyle = R"(<style>
:root{--fg:#1b1b1b;--muted:#555;--line:#d0d0d0;--bg:#fff;--panel:#f6f6f6}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:16px;max-width:1180px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;border-bottom:2px solid var(--line)}h3{font-size:1.05em;margin:1.2em 0 .3em}
.verdict{font-size:1.15em;font-weight:600;background:var(--panel);border-left:6px solid #0072B2;padding:.6em .8em;margin:.6em 0}
.muted{color:var(--muted)}.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.grid{display:flex;flex-wrap:wrap;gap:16px}.grid>section{flex:1 1 520px;min-width:0}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;margin:.3em 0}th,td{padding:3px 6px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
th{font-weight:600;background:var(--panel)}td.name{word-break:break-all;min-width:14em}
.swatch{display:inline-block;width:.9em;height:.9em;border:1px solid #333;margin-right:.35em;vertical-align:-1px}
svg{width:100%;height:auto;display:block}svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#333}
.finding{border:1px solid var(--line);border-radius:6px;padding:.5em .8em;margin:.6em 0}
.fix{background:#eef6fb;padding:.4em .6em;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.4em 0}dt{color:var(--muted)}dd{margin:0}
@media (max-width:640px){body{padding:8px;font-size:14px}.hide-narrow{display:none}}
@media print{body{max-width:none}.finding,section{break-inside:avoid}}
</style>)";

}  // namespace

std::string htmlText(std::string_view text) {
  const std::string safe = printable(text);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

void writeHtmlHead(std::ostream& out, std::string_view title) {
  out << "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
         "<meta name=viewport content=\"width=device-width,initial-scale=1\"><title>"
      << title << "</title>\n" << kStyle << "</head><body>\n";
}

std::string svgNumber(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", x);
  return buffer;
}

void writeHtmlTail(std::ostream& out) { out << "</body></html>\n"; }

bool outputPathUsable(const std::string& path, std::string_view who, std::ostream& err) {
  std::string problem;
  if (checkOutputPath(path, &problem)) return true;
  err << who << printable(path) << ": " << problem << '\n';
  return false;
}

bool writeWholeFile(const std::string& path, const std::string& content, std::string_view who, std::ostream& err) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) {
    err << who << path << ": not a file name\n";
    return false;
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    err << who << path << ": cannot open its directory: " << strerror(errno) << '\n';
    return false;
  }
  std::string error;
  const bool written = replaceOutputFile(dir_fd, name, content, &error);
  ::close(dir_fd);
  if (!written) err << who << path << ": " << error << '\n';
  return written;
}

}  // namespace gapwatch::cli
