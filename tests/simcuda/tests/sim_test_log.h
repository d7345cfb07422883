// Test helper: reading the simulated driver's logs (simcuda/timeline.h) from Catch2 tests, with a
// REQUIRE that the entry asked for exists. The log only grows, so an index stays valid.
#pragma once

#include <catch2/catch.hpp>
#include <stddef.h>
#include <stdint.h>

#include "simcuda/timeline.h"

namespace simtest {

inline size_t op_count() {
  const SimDeviceOp* ops;
  return simcuda_device_ops(&ops);
}

inline const SimDeviceOp& op(uint64_t index) {
  const SimDeviceOp* ops;
  size_t n = simcuda_device_ops(&ops);
  REQUIRE(index < n);
  return ops[index];
}

// An op by the signed index the sim's logs use (SimApiCall::op_index is -1 when none).
inline const SimDeviceOp& op_at(int64_t index) {
  REQUIRE(index >= 0);
  return op(uint64_t(index));
}

inline uint64_t last_op_index() {
  size_t n = op_count();
  REQUIRE(n > 0);
  return n - 1;
}

inline const SimDeviceOp& last_op() { return op(last_op_index()); }

inline const SimApiCall& last_call() {
  const SimApiCall* calls;
  size_t n = simcuda_api_calls(&calls);
  REQUIRE(n > 0);
  return calls[n - 1];
}

}  // namespace simtest
