// tools/report_html.h: `gapwatch report --html FILE`: the report as one self-contained HTML page.
//
// The same analysis as the text and JSON reports (analysis/run_analysis.h), laid out to be looked
// at: per process the verdict, idle by cause, the gap histogram, step time over the run, a strip of
// the device's window with its longest gaps where they happened, sync points with their call
// sites and the findings with their fixes; across ranks the rank table and cross-rank findings.
// One file: the styles inline, the plots inline SVG drawn here, no script, no font, nothing
// fetched, so it reads offline, mailed, archived and printed. Colours are the Okabe-Ito palette
// (told apart with the common colour-vision deficiencies) and every coloured mark is also named in
// text beside it. Recorded strings (kernel names, paths, host names) are untrusted: every one is
// escaped.
#pragma once

#include "analysis/run_analysis.h"

#include <ostream>

namespace gapwatch::cli {

void writeHtmlReport(const analysis::RunReport& content, std::ostream& out);

}  // namespace gapwatch::cli
