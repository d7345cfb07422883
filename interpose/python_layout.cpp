// python_layout.cpp: the generated table (python_layouts.inc) and its look-up.
#include "python_layout.h"

namespace gapwatch {

const PythonLayout kPythonLayouts[] = {
#include "python_layouts.inc"
};
const size_t kPythonLayoutCount = sizeof kPythonLayouts / sizeof kPythonLayouts[0];

const PythonLayout* python_layout_for(int minor) {
  for (size_t i = 0; i < kPythonLayoutCount; ++i) {
    if (kPythonLayouts[i].minor == minor) return &kPythonLayouts[i];
  }
  return nullptr;
}

}  // namespace gapwatch
