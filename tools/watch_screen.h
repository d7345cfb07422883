// tools/watch_screen.h: the terminal while `gapwatch watch` draws on it, and the terminal given
// back as it was.
//
// Taking it switches to the alternate screen, hides the cursor and, when stdin is a terminal,
// turns off line buffering and echo so a single `q` is read at once (signals such as Ctrl-C still
// arrive as signals). The destructor undoes all of it, on every way out that unwinds.
#pragma once

#include <termios.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gapwatch::cli {

class WatchScreen {
 public:
  WatchScreen();  // takes the terminal on stdout (and stdin, when it is one)
  ~WatchScreen();
  WatchScreen(const WatchScreen&) = delete;
  WatchScreen& operator=(const WatchScreen&) = delete;

  // Whether keys can be read from stdin (it is a terminal).
  bool readsKeys() const { return raw_input_; }
  // Rows and columns now (0 when the terminal does not say).
  std::size_t rows() const;
  std::size_t columns() const;
  // Replaces what is on the screen by these lines, from the top left corner.
  void draw(const std::vector<std::string>& lines);

 private:
  bool raw_input_ = false;
  termios saved_{};
};

}  // namespace gapwatch::cli
