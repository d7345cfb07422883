// The two classifications of a CUDA call agree: the recorder's, from CUPTI's callback id
// (interpose/cuda_api_map.cpp, on the user's thread: a switch), and the Kineto reader's, from the
// name a trace gives (reader/kineto_api_table.cpp: a table). They read different inputs, so each
// has its own form; what they decide is one rule, and this test is what keeps it one. For every
// callback id the recorder enables, its name is read from CUPTI's own header (cupti_runtime_cbid.h,
// cupti_driver_cbid.h: "CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 = 211") and both must give
// the same kind, and the same "waits for the device by its nature".
#include "analysis/sync_points.h"
#include "cuda_api_map.h"
#include "reader/kineto_api_table.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace gapwatch {
namespace {

// cbid -> name as the header spells it, for one domain's enum ("CUPTI_RUNTIME_TRACE_CBID_").
std::map<uint32_t, std::string> cbidNames(const std::string& header, const std::string& prefix) {
  std::ifstream in(std::string(GAPWATCH_CUPTI_INCLUDE_DIR) + "/" + header);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::map<uint32_t, std::string> names;
  const std::regex entry(prefix + "(\\w+)\\s*=\\s*(\\d+)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), entry); it != std::sregex_iterator(); ++it) {
    names[static_cast<uint32_t>(std::stoul((*it)[2]))] = (*it)[1];
  }
  return names;
}

void checkDomain(CUpti_CallbackDomain domain, const CUpti_CallbackId* recorded, const std::string& header,
                 const std::string& prefix) {
  const std::map<uint32_t, std::string> names = cbidNames(header, prefix);
  REQUIRE(names.size() > 100);
  int checked = 0;
  for (const CUpti_CallbackId* cbid = recorded; *cbid != 0; ++cbid) {
    const auto name = names.find(*cbid);
    REQUIRE(name != names.end());
    ApiCallRecord record{};
    // No params: the kind a call has by its name alone (a copy's direction, cudaFree(0), are the
    // params' and the trace's GPU record's to tell, on each side).
    REQUIRE(classify_api_call(domain, *cbid, nullptr, &record));
    const ApiClass by_name = classifyApi(name->second);
    INFO(name->second << " (cbid " << *cbid << ")");
    CHECK(static_cast<uint32_t>(by_name.kind) == record.kind);
    CHECK(by_name.blocked == ((record.flags & kFlagBlocked) != 0));
    ++checked;
  }
  CHECK(checked > 10);
}

TEST_CASE("every runtime call the recorder enables is the same kind by its Kineto name", "[api]") {
  checkDomain(CUPTI_CB_DOMAIN_RUNTIME_API, kRecordedRuntimeCbids, "cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_");
}

TEST_CASE("every driver call the recorder enables is the same kind by its Kineto name", "[api]") {
  checkDomain(CUPTI_CB_DOMAIN_DRIVER_API, kRecordedDriverCbids, "cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_");
}

TEST_CASE("a synchronous copy waits for the device by one rule: the recorder's from its params, a trace's from its record", "[api]") {
  struct Case {
    cudaMemcpyKind kind;
    v1::CopyKind copy_kind;
  };
  const Case cases[] = {{cudaMemcpyHostToDevice, v1::COPY_KIND_H2D},
                        {cudaMemcpyDeviceToHost, v1::COPY_KIND_D2H},
                        {cudaMemcpyDeviceToDevice, v1::COPY_KIND_D2D},
                        {cudaMemcpyHostToHost, v1::COPY_KIND_H2H}};
  int blocking = 0;
  for (const Case& c : cases) {
    for (const size_t bytes : {size_t{4}, size_t{64 * 1024}, size_t{64 * 1024 + 1}, size_t{8 << 20}}) {
      cudaMemcpy_v3020_params params{};
      params.kind = c.kind;
      params.count = bytes;
      ApiCallRecord record{};
      REQUIRE(classify_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &params, &record));
      INFO("kind " << static_cast<int>(c.kind) << ", " << bytes << " bytes");
      const bool recorder = (record.flags & kFlagBlocked) != 0;
      CHECK(recorder == synchronousCopyBlocks(c.copy_kind, bytes));
      blocking += recorder;
    }
  }
  CHECK(blocking == 10);  // D2H and H2H at every size, H2D past 64 KiB
}

}  // namespace
}  // namespace gapwatch
