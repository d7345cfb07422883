// reader/api_name.h: the one definition of how a CUDA or HIP API name is reduced before it is
// compared, for the Kineto reader's classification and the HTA view.
//
// Two reductions, on purpose:
//   - withoutApiVersionSuffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel". CUPTI's callback
//     names carry the version; Kineto writes names without it. The HTA view compares names as HTA
//     does, exactly, so only this is taken off there: HTA does not count "cudaLaunchKernel_ptsz".
//   - baseApiName: also the per-thread default stream variants, CUDA's _ptsz and _ptds and HIP's
//     _spt ("cudaMemcpyAsync_ptsz", "hipMemcpyAsync_spt"), which are the same call for what kind
//     of call it is (the reader's classification).
#pragma once

#include <string_view>

namespace gapwatch {

inline std::string_view withoutApiVersionSuffix(std::string_view name) {
  const std::size_t at = name.rfind("_v");
  if (at == std::string_view::npos || at + 2 == name.size()) return name;
  for (std::size_t i = at + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, at);
}

inline std::string_view baseApiName(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds", "_spt"}) {
    const std::size_t at = name.find(suffix);
    if (at != std::string_view::npos) name = name.substr(0, at);
  }
  return withoutApiVersionSuffix(name);
}

}  // namespace gapwatch
