// collector/metrics_server.h: the collector's Prometheus endpoint (`--metrics ADDR:PORT`): an HTTP
// server (libmicrohttpd) that serves GET and HEAD /metrics and nothing else (docs/collector.md,
// "Metrics").
//
// Threads. The server runs in libmicrohttpd's own thread (MHD_USE_INTERNAL_POLLING_THREAD), which
// answers every request; it only ever copies the latest exposition text, under mutex_. The
// collector's loop thread renders that text from its status (metrics_exposition.h) once a second
// and when a process ends, and hands it over with publish(), under the same mutex: the loop's
// data (connections, analyses) never leaves the loop thread. The HTTP thread must start after the
// collector has blocked SIGINT and SIGTERM, so that it inherits the mask and the signals still go
// to the loop's signalfd.
//
// Limits, so that no client can hold the endpoint: at most kMaxConnections connections at once,
// each closed after kConnectionTimeoutSeconds without activity, and a small per-connection
// memory pool (a request has no body worth reading).
#pragma once

#include <memory>
#include <mutex>
#include <string>

struct MHD_Daemon;

namespace gapwatch::collector {

// Where to listen, from --metrics: "PORT" or ":PORT" (loopback, 127.0.0.1), "HOST:PORT",
// "[IPv6]:PORT". HOST is a numeric address, or localhost (127.0.0.1): no name is looked up. Port
// 0: any free port.
struct MetricsAddress {
  std::string host;
  std::string port;
};
// False with *error set (one line, no trailing newline) when the text is not an address.
bool parseMetricsAddress(const std::string& text, MetricsAddress* address, std::string* error);

class MetricsServer {
 public:
  static constexpr unsigned kMaxConnections = 32;
  static constexpr unsigned kConnectionTimeoutSeconds = 10;

  // Binds the listening socket (no thread yet). Null with *error set when the address is bad, or
  // cannot be bound (in use, not this machine's).
  static std::unique_ptr<MetricsServer> bind(const std::string& text, std::string* error);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Starts the HTTP thread. False with *error set when libmicrohttpd cannot.
  bool start(std::string* error);
  // The URL it serves, with the port actually bound: "http://127.0.0.1:9464/metrics".
  const std::string& url() const { return url_; }
  // Loop thread: the text every request gets from now on.
  void publish(std::string text);
  // HTTP thread: a copy of the latest text.
  std::string latest() const;

 private:
  MetricsServer(int fd, std::string url) : fd_(fd), url_(std::move(url)) {}

  int fd_;  // the listening socket; libmicrohttpd closes it once started
  std::string url_;
  MHD_Daemon* daemon_ = nullptr;
  mutable std::mutex mutex_;
  std::string text_;  // guarded by mutex_
};

}  // namespace gapwatch::collector
