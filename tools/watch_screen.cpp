// tools/watch_screen.cpp: see watch_screen.h.
#include "tools/watch_screen.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>

namespace gapwatch::cli {
namespace {

// ECMA-48 / xterm sequences every terminal emulator in use (and tmux) understands.
constexpr const char* kAlternateScreenOn = "\x1b[?1049h";
constexpr const char* kAlternateScreenOff = "\x1b[?1049l";
constexpr const char* kCursorHide = "\x1b[?25l";
constexpr const char* kCursorShow = "\x1b[?25h";
constexpr const char* kHome = "\x1b[H";
constexpr const char* kClearToLineEnd = "\x1b[K";
constexpr const char* kClearToScreenEnd = "\x1b[J";

winsize windowSize() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return winsize{};
  return size;
}

}  // namespace

WatchScreen::WatchScreen() {
  if (::isatty(STDIN_FILENO) == 1 && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    raw_input_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  std::cout << kAlternateScreenOn << kCursorHide << std::flush;
}

WatchScreen::~WatchScreen() {
  std::cout << kCursorShow << kAlternateScreenOff << std::flush;
  if (raw_input_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

std::size_t WatchScreen::rows() const { return windowSize().ws_row; }
std::size_t WatchScreen::columns() const { return windowSize().ws_col; }

void WatchScreen::draw(const std::vector<std::string>& lines) {
  // Overwritten in place, line by line, rather than cleared first: no flicker between frames.
  std::string frame = kHome;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    frame += lines[i];
    frame += kClearToLineEnd;
    if (i + 1 < lines.size()) frame += "\r\n";
  }
  frame += kClearToScreenEnd;
  std::cout << frame << std::flush;
}

}  // namespace gapwatch::cli
