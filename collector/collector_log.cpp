// collector/collector_log.cpp: see collector_log.h.
#include "collector/collector_log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace gapwatch::collector {
namespace {

// A plain stderr sink (no colours: the log is mostly read from files and by tests), created on
// first use so that nothing in a static initialiser depends on spdlog's registry.
spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> log = [] {
    auto l = std::make_shared<spdlog::logger>("collector", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e gapwatch collector: %v");
    l->flush_on(spdlog::level::info);
    return l;
  }();
  return *log;
}

}  // namespace

void logInfo(const std::string& line) { logger().info(line); }
void logWarning(const std::string& line) { logger().warn("warning: " + line); }
void silenceLog() { logger().set_level(spdlog::level::off); }

}  // namespace gapwatch::collector
