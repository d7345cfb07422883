// What a module image declares: its kernels (entry points) and its device globals. Parsed from
// the three forms cuModuleLoadData accepts (driver_image.cpp says how).
#pragma once

#include <stddef.h>

#include <string>
#include <vector>

namespace simcuda::driver {

struct ImageGlobal {
  std::string name;
  size_t size = 0;
};

struct ImageSymbols {
  std::vector<std::string> kernels;  // mangled names, as the image spells them
  std::vector<ImageGlobal> globals;
  bool had_compressed = false;       // an entry was compressed in a way this parser cannot read
};

enum class ImageKind { kInvalid, kPtx, kCubin, kFatbin };

// `size` is the byte count when known (a file), 0 when the image must describe its own extent
// (cuModuleLoadData: PTX is NUL-terminated, ELF and fatbin headers give their sizes).
ImageKind parse_image(const void* image, size_t size, ImageSymbols* out);

}  // namespace simcuda::driver
