// collector/metrics_server.cpp: see metrics_server.h. The socket is bound here rather than by
// libmicrohttpd so that a port in use or a bad address is one clear line (the errno's words)
// before anything else of the collector starts, and so that port 0's actual port is known.
#include "collector/metrics_server.h"

#include "collector/metrics_exposition.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include <cstring>

namespace gapwatch::collector {
namespace {

bool allDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// A response with a copy of `body` (libmicrohttpd frees its copy once sent).
MHD_Result reply(MHD_Connection* connection, unsigned status, const std::string& body, const char* content_type,
                 const char* allow = nullptr) {
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (allow != nullptr) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

// libmicrohttpd's access handler, on the HTTP thread. Answers at the first call, with the headers:
// no request here has a body worth reading (a POST's is discarded with the 405).
MHD_Result handleRequest(void* cls, MHD_Connection* connection, const char* url, const char* method,
                         const char* /*version*/, const char* /*upload_data*/, size_t* /*upload_data_size*/,
                         void** /*con_cls*/) {
  const auto* server = static_cast<const MetricsServer*>(cls);
  const char* text_type = "text/plain; charset=utf-8";
  if (std::strcmp(url, "/metrics") != 0) return reply(connection, MHD_HTTP_NOT_FOUND, "not found: only /metrics\n", text_type);
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
    return reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: GET or HEAD\n", text_type, "GET, HEAD");
  }
  return reply(connection, MHD_HTTP_OK, server->latest(), kMetricsContentType);
}

}  // namespace

bool parseMetricsAddress(const std::string& text, MetricsAddress* address, std::string* error) {
  std::string host = "127.0.0.1", port;
  if (allDigits(text)) {
    port = text;
  } else if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "not an address: give PORT, HOST:PORT or [IPv6]:PORT";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      *error = "not an address: give PORT, HOST:PORT or [IPv6]:PORT";
      return false;
    }
    if (colon > 0) host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    *error = "not an address: the host is empty";
    return false;
  }
  if (host == "localhost") host = "127.0.0.1";
  if (!allDigits(port) || port.size() > 5 || std::stoul(port) > 65535) {
    *error = "not a port: " + (port.empty() ? std::string("(none)") : port) + " (give 0 to 65535)";
    return false;
  }
  address->host = host;
  address->port = port;
  return true;
}

std::unique_ptr<MetricsServer> MetricsServer::bind(const std::string& text, std::string* error) {
  MetricsAddress address;
  std::string why;
  if (!parseMetricsAddress(text, &address, &why)) {
    *error = "--metrics " + text + ": " + why;
    return nullptr;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  // Numeric only: no name lookup (and no DNS wait) at start-up.
  hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found); rc != 0) {
    *error = "--metrics " + text + ": " + address.host + ": " + gai_strerror(rc);
    return nullptr;
  }
  const addrinfo* ai = found;
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    *error = "--metrics " + text + ": socket: " + strerror(errno);
    ::freeaddrinfo(found);
    return nullptr;
  }
  // A restarted collector can bind again while its old connections are in TIME_WAIT; a port some
  // other program listens on still fails.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ai->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
    *error = "--metrics " + text + ": cannot listen on it: " + strerror(errno);
    ::close(fd);
    ::freeaddrinfo(found);
    return nullptr;
  }
  ::freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  char name[INET6_ADDRSTRLEN] = {};
  std::string url;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) == 0 && bound.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&bound);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, name, sizeof name);
    url = "http://[" + std::string(name) + "]:" + std::to_string(ntohs(in6->sin6_port)) + "/metrics";
  } else {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(&bound);
    ::inet_ntop(AF_INET, &in4->sin_addr, name, sizeof name);
    url = "http://" + std::string(name) + ":" + std::to_string(ntohs(in4->sin_port)) + "/metrics";
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(fd, std::move(url)));
}

bool MetricsServer::start(std::string* error) {
  daemon_ = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, nullptr, nullptr, &handleRequest, this,
                             MHD_OPTION_LISTEN_SOCKET, fd_,
                             MHD_OPTION_CONNECTION_LIMIT, kMaxConnections,
                             MHD_OPTION_CONNECTION_TIMEOUT, kConnectionTimeoutSeconds,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t(64 * 1024),
                             MHD_OPTION_END);
  if (daemon_ == nullptr) {
    *error = "--metrics: the HTTP server (libmicrohttpd) did not start";
    return false;
  }
  return true;
}

MetricsServer::~MetricsServer() {
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);  // joins the HTTP thread and closes the listening socket
  } else {
    ::close(fd_);
  }
}

void MetricsServer::publish(std::string text) {
  std::lock_guard<std::mutex> lock(mutex_);
  text_.swap(text);
}

std::string MetricsServer::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_;
}

}  // namespace gapwatch::collector
