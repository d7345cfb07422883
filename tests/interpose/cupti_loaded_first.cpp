// A program that has its own libcupti before CUDA starts, as a cu12 PyTorch has its wheel's
// libcupti.so.12 (Kineto links it): argv[1] is the libcupti to load. It launches a few kernels,
// then prints every libcupti mapped in the process, one "mapped <path>" line each: gapwatch must
// have used this one and loaded no second one beside it (cupti12_test.py).
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <set>
#include <string>

#include "sim_test_kernels.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cupti_loaded_first <libcupti path>\n");
    return 2;
  }
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "cupti_loaded_first: %s\n", dlerror());
    return 1;
  }
  static simtest::TestKernel kernel;
  simtest::register_kernel(kernel, "_Z9firstworkv");
  for (int i = 0; i < 5; ++i) simtest::launch(kernel, 20000);
  cudaDeviceSynchronize();
  std::set<std::string> mapped;
  if (FILE* maps = fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (fgets(line, sizeof line, maps)) {
      const char* path = strchr(line, '/');
      if (!path || !strstr(path, "libcupti")) continue;
      std::string p(path);
      while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
      mapped.insert(p);
    }
    fclose(maps);
  }
  for (const auto& p : mapped) printf("mapped %s\n", p.c_str());
  return 0;
}
