// reader/python_stack_text.cpp: see python_stack_text.h.
#include "reader/python_stack_text.h"

#include <charconv>

namespace gapwatch {

std::vector<PythonFrame> parsePythonStack(std::string_view text) {
  std::vector<PythonFrame> frames;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t tab1 = line.find('\t');
    const std::size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
    if (tab2 == std::string_view::npos || tab1 == 0 || tab2 == tab1 + 1) continue;
    PythonFrame frame;
    frame.function = std::string(line.substr(0, tab1));
    frame.file = std::string(line.substr(tab1 + 1, tab2 - tab1 - 1));
    const std::string_view number = line.substr(tab2 + 1);
    uint32_t value = 0;
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec == std::errc() && ptr == number.data() + number.size()) frame.line = value;
    frames.push_back(std::move(frame));
  }
  return frames;
}

bool isLibraryFrame(const PythonFrame& frame) {
  const std::string& f = frame.file;
  if (f.find("site-packages/") != std::string::npos || f.find("dist-packages/") != std::string::npos) return true;
  if (f.rfind("<frozen ", 0) == 0) return true;
  // From a Kineto trace (kineto_call_sites.h): a range with no file ("<built-in method item ...>",
  // "nn.Module: Linear_0"), and torch's own files, which the profiler writes relative to
  // site-packages ("torch/_tensor.py"). A recording's files are the interpreter's co_filename.
  if (f.empty() || f.rfind("torch/", 0) == 0) return true;
  // The standard library: .../lib/python3.X/module.py (and its packages), outside site-packages.
  const std::size_t lib = f.find("/lib/python3.");
  if (lib == std::string::npos) return false;
  const std::size_t slash = f.find('/', lib + 13);
  return slash != std::string::npos;
}

std::size_t namedFrameIndex(const std::vector<PythonFrame>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (!isLibraryFrame(frames[i])) return i;
  return 0;
}

std::string frameText(const PythonFrame& frame) {
  std::string_view file = frame.file;
  const std::size_t last = file.rfind('/');
  if (last != std::string_view::npos && last > 0) {
    const std::size_t before = file.rfind('/', last - 1);
    if (before != std::string_view::npos) file = file.substr(before + 1);
  }
  std::string text(file);
  if (frame.line) text += ":" + std::to_string(frame.line);
  return text + " in " + frame.function;
}

std::string pythonSiteText(std::string_view stack_text) {
  const std::vector<PythonFrame> frames = parsePythonStack(stack_text);
  if (frames.empty()) return "";
  const std::size_t named = namedFrameIndex(frames);
  std::string text = frameText(frames[named]);
  if (named > 0) text += " (via " + frameText(frames[0]) + ")";
  return text;
}

std::string pythonStackMissReason(uint64_t id) {
  switch (id) {
    case 1: return "an interpreter version gapwatch has no frame layout for";
    case 2: return "a subinterpreter";
    case 3: return "a Python thread with no frame";
    case 4: return "a value that failed a sanity check";
    case 5: return "the stacks' hand-over to the flusher was full";
    case 6: return "its stack was let go before the call's record came (over 4,096 held)";
    case 7: return "an object outside every readable mapping (not read: a build laid out otherwise)";
    case 8: return "a free-threaded build";
    case 9: return "the interpreter's own _Py_DebugOffsets disagree with gapwatch's layout";
  }
  return "reason " + std::to_string(id);
}

}  // namespace gapwatch
