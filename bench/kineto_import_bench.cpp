// kineto_import_bench: how fast a Kineto (PyTorch profiler) trace is read and reported, in-process,
// next to simdjson merely parsing the same bytes. Run by bench/kineto_import_bench.py.
//   kineto_import_bench MODE FILE REPEATS
// MODE gapwatch:          what `gapwatch report --hta FILE` does, minus process start: read, analyse
//                         (AnalysisOptions::hta_view on) and format the text report into a string
// MODE simdjson-dom:      read the file, then simdjson's DOM parse of the whole buffer
// MODE simdjson-ondemand: read the file, then On-Demand over every traceEvents element, reading ph and ts
// Prints best_s (the fastest of at least REPEATS runs, more on small files up to 1 s in all, each from the file as gapwatch's is), for the simdjson
// modes also warm_parse_s (the parse alone of bytes in memory, on a parser whose buffers a first
// parse allocated: simdjson at its best), the implementation simdjson chose for this CPU, a count
// (report bytes, or elements) so that nothing is optimised away, and the peak RSS.
#include "bench/bench_clock.h"
#include <simdjson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "tools/report_command.h"

namespace {

double now_s() { return gapwatch::bench::nowSeconds(); }
long peak_rss_kb() { return gapwatch::bench::peakRssKb(); }

// One gapwatch report, as the command line makes it; returns the report's length (0 on error).
uint64_t gapwatchOnce(const std::string& file) {
  gapwatch::cli::ReportOptions options;
  options.files = {file};
  options.analysis.hta_view = true;
  std::ostringstream out, err;
  int code = gapwatch::cli::runReport(options, out, err);
  if (code != 0) {
    fprintf(stderr, "kineto_import_bench: report of %s: exit %d: %s", file.c_str(), code, err.str().c_str());
    return 0;
  }
  return out.str().size();
}

// simdjson's parse of bytes already in memory, on a parser that may be reused (its buffers are
// allocated by the first parse of a document that size).
uint64_t domParse(simdjson::dom::parser& parser, const simdjson::padded_string& json) {
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc)) return 0;
  simdjson::dom::array events;
  if (doc["traceEvents"].get_array().get(events)) return 0;
  return events.size();
}

uint64_t onDemandParse(simdjson::ondemand::parser& parser, const simdjson::padded_string& json) {
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc)) return 0;
  simdjson::ondemand::array events;
  if (doc["traceEvents"].get_array().get(events)) return 0;
  uint64_t count = 0;
  double ts_sum = 0;
  for (auto element : events) {
    simdjson::ondemand::object event;
    if (element.get_object().get(event)) return 0;
    std::string_view ph;
    if (!event["ph"].get_string().get(ph)) count += ph.size();
    double ts = 0;
    if (!event["ts"].get_double().get(ts)) ts_sum += ts;
    ++count;
  }
  return count + (ts_sum < 0 ? 1 : 0);
}

// As gapwatch is timed: the file read, a fresh parser, the parse.
uint64_t domOnce(const std::string& file) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file).get(json)) return 0;
  simdjson::dom::parser parser;
  return domParse(parser, json);
}

uint64_t onDemandOnce(const std::string& file) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file).get(json)) return 0;
  simdjson::ondemand::parser parser;
  return onDemandParse(parser, json);
}

// simdjson at its best: the bytes in memory, the parser's buffers allocated by a first parse.
template <typename Parser, typename Parse>
double warmBest(const std::string& file, int repeats, Parse parse) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file).get(json)) return -1;
  Parser parser;
  if (parse(parser, json) == 0) return -1;
  double best = 1e30, spent = 0;
  for (int i = 0; i < repeats || (spent < 1.0 && i < 200); ++i) {
    double start = now_s();
    if (parse(parser, json) == 0) return -1;
    double took = now_s() - start;
    best = std::min(best, took);
    spent += took;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: kineto_import_bench gapwatch|simdjson-dom|simdjson-ondemand FILE REPEATS\n");
    return 1;
  }
  std::string mode = argv[1], file = argv[2];
  int repeats = atoi(argv[3]);
  uint64_t (*once)(const std::string&) = nullptr;
  if (mode == "gapwatch") once = gapwatchOnce;
  if (mode == "simdjson-dom") once = domOnce;
  if (mode == "simdjson-ondemand") once = onDemandOnce;
  if (!once || repeats < 1) {
    fprintf(stderr, "kineto_import_bench: unknown mode %s or REPEATS < 1\n", mode.c_str());
    return 1;
  }
  double best = 1e30;
  uint64_t count = 0;
  // At least REPEATS runs, and on a small file more, up to 1 s in all: on a shared machine the
  // best of many short runs is the one another process did not interrupt.
  double spent = 0;
  for (int i = 0; i < repeats || (spent < 1.0 && i < 200); ++i) {
    double start = now_s();
    count = once(file);
    double took = now_s() - start;
    spent += took;
    if (count == 0) {
      fprintf(stderr, "kineto_import_bench: %s failed on %s\n", mode.c_str(), file.c_str());
      return 1;
    }
    if (took < best) best = took;
  }
  double warm = 0;  // 0: not a simdjson mode
  if (mode == "simdjson-dom") warm = warmBest<simdjson::dom::parser>(file, repeats, domParse);
  if (mode == "simdjson-ondemand") warm = warmBest<simdjson::ondemand::parser>(file, repeats, onDemandParse);
  if (warm < 0) {
    fprintf(stderr, "kineto_import_bench: %s failed on %s\n", mode.c_str(), file.c_str());
    return 1;
  }
  printf("best_s=%.6f warm_parse_s=%.6f count=%llu implementation=%s peak_rss_kb=%ld\n", best, warm,
         (unsigned long long)count, simdjson::get_active_implementation()->name().c_str(), peak_rss_kb());
  return 0;
}
