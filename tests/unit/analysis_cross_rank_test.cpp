// Whom the ranks waited for in collectives (analysis/cross_rank.h). Times in microseconds.
#include "analysis/cross_rank.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t us(uint64_t v) { return v * 1'000; }

// One communicator whose k-th kernel starts at starts[k] and ends at ends[k].
CommunicatorKernels comm(std::vector<uint64_t> starts_us, std::vector<uint64_t> ends_us, std::string identity = "",
                         int32_t nranks = 2) {
  CommunicatorKernels c;
  c.identity = std::move(identity);
  c.nranks = nranks;
  for (uint64_t s : starts_us) c.starts_ns.push_back(us(s));
  for (uint64_t e : ends_us) c.ends_ns.push_back(us(e));
  return c;
}

RankCollectives rankWith(int32_t rank, std::vector<CommunicatorKernels> comms, std::string host = "node0") {
  RankCollectives r;
  r.rank = rank;
  r.host = std::move(host);
  r.communicators = std::move(comms);
  return r;
}

const RankWait& waitOf(const std::vector<RankWait>& waits, int32_t rank) {
  for (const RankWait& w : waits) {
    if (w.rank == rank) return w;
  }
  FAIL("no entry for rank " << rank);
  return waits.front();
}

}  // namespace

TEST_CASE("two ranks: the rank that starts a collective last is the one the other waited for", "[cross_rank]") {
  // Collective 0: rank 1 starts 50 us after rank 0. Collective 1: rank 0 starts 10 us after
  // rank 1. Collective 2: rank 1 starts 60 us after rank 0. Ends are common to both ranks.
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100, 300, 500}, {200, 400, 600})}),
      rankWith(1, {comm({150, 290, 560}, {200, 400, 600})}),
  });
  REQUIRE(waits.size() == 2);
  CHECK(waits[0].rank == 0);
  CHECK(waits[1].rank == 1);
  CHECK(waitOf(waits, 1).waited_for_ns == us(50 + 60));
  CHECK(waitOf(waits, 1).collectives_last == 2);
  CHECK(waitOf(waits, 0).waited_for_ns == us(10));
  CHECK(waitOf(waits, 0).collectives_last == 1);
}

TEST_CASE("three ranks: every early rank's wait is charged to the last one", "[cross_rank]") {
  // Starts 10, 40, 30: rank 1 is last; rank 0 waited 30 us, rank 2 waited 10 us.
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({10}, {50}, "", 3)}),
      rankWith(1, {comm({40}, {50}, "", 3)}),
      rankWith(2, {comm({30}, {50}, "", 3)}),
  });
  REQUIRE(waits.size() == 3);
  CHECK(waitOf(waits, 1).waited_for_ns == us(40));
  CHECK(waitOf(waits, 1).collectives_last == 1);
  CHECK(waitOf(waits, 0).collectives_last == 0);
  CHECK(waitOf(waits, 2).collectives_last == 0);
}

TEST_CASE("a collective all ranks start together names nobody", "[cross_rank]") {
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100}, {200})}),
      rankWith(1, {comm({100}, {200})}),
  });
  REQUIRE(waits.size() == 2);
  CHECK(waits[0].collectives_last + waits[1].collectives_last == 0);
  CHECK(waits[0].waited_for_ns + waits[1].waited_for_ns == 0);
}

TEST_CASE("one rank alone gives no cross-rank result", "[cross_rank]") {
  CHECK(attributeRankWaits({rankWith(0, {comm({100}, {200})})}).empty());
  CHECK(attributeRankWaits({}).empty());
}

TEST_CASE("collectives are matched per communicator, by identity when ranks share one", "[cross_rank]") {
  // Rank 1 used "tp" first, so its communicators are listed in the other order. In "world" rank 0
  // is 20 us late; in "tp" rank 1 is 5 us late.
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({120}, {200}, "world"), comm({300}, {400}, "tp")}),
      rankWith(1, {comm({305}, {400}, "tp"), comm({100}, {200}, "world")}),
  });
  CHECK(waitOf(waits, 0).waited_for_ns == us(20));
  CHECK(waitOf(waits, 0).collectives_last == 1);
  CHECK(waitOf(waits, 1).waited_for_ns == us(5));
  CHECK(waitOf(waits, 1).collectives_last == 1);
}

TEST_CASE("communicators without a shared identity are matched by order of use and size", "[cross_rank]") {
  // Process-local handles differ across ranks; the first 2-rank communicator of each rank is the
  // same one, and the 4-rank one is matched apart from it.
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100, 300}, {200, 400}, "0x7f00aa", 2), comm({500}, {600}, "0x7f00bb", 4)}),
      rankWith(1, {comm({510}, {600}, "0x5500bb", 4), comm({130, 300}, {200, 400}, "0x5500aa", 2)}),
  });
  // 2-rank: rank 1 late by 30 us once (the second one ties). 4-rank: rank 1 late by 10 us.
  CHECK(waitOf(waits, 1).waited_for_ns == us(40));
  CHECK(waitOf(waits, 1).collectives_last == 2);
  CHECK(waitOf(waits, 0).collectives_last == 0);
}

TEST_CASE("a rank on another host is put on the same clock by the common kernel ends", "[cross_rank]") {
  // Rank 1's clock reads 1 s more than rank 0's. In true time rank 1 starts 50 us late, then 10
  // us early; each collective ends at the same true time on both ranks.
  constexpr uint64_t kSkewUs = 1'000'000;
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100, 300}, {200, 400})}, "node0"),
      rankWith(1, {comm({150 + kSkewUs, 290 + kSkewUs}, {200 + kSkewUs, 400 + kSkewUs})}, "node1"),
  });
  CHECK(waitOf(waits, 1).waited_for_ns == us(50));
  CHECK(waitOf(waits, 1).collectives_last == 1);
  CHECK(waitOf(waits, 0).waited_for_ns == us(10));
  CHECK(waitOf(waits, 0).collectives_last == 1);
}

TEST_CASE("a rank that recorded fewer collectives is compared on the ones both have", "[cross_rank]") {
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100, 300, 500}, {200, 400, 600})}),
      rankWith(1, {comm({140}, {200})}),
  });
  CHECK(waitOf(waits, 1).waited_for_ns == us(40));
  CHECK(waitOf(waits, 1).collectives_last == 1);
}

TEST_CASE("ranks without a rank number are numbered by position", "[cross_rank]") {
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(-1, {comm({100}, {200})}),
      rankWith(-1, {comm({130}, {200})}),
  });
  CHECK(waitOf(waits, 1).waited_for_ns == us(30));
}

namespace {

// One rank's recording: NCCL all-reduces on communicator 1, each launching its kernel.
RankCollectives summaryOf(int32_t rank, const std::vector<uint64_t>& kernel_starts_us) {
  StringTable strings;
  strings.define(v1::STRING_KIND_KERNEL_NAME, 1,
                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
  strings.define(v1::STRING_KIND_KERNEL_NAME, 2, "_Z13gemm_bf16_128PKfS0_Pf");
  CollectiveArrivalStage stage;
  stage.setStrings(&strings);
  uint64_t correlation = 1;
  for (uint64_t start_us : kernel_starts_us) {
    NcclCallEvent call;
    call.op = v1::NCCL_OP_ALL_REDUCE;
    call.thread_id = 10;
    call.start_ns = us(start_us - 50);
    call.end_ns = us(start_us - 40);
    call.comm_id = 1;
    call.stream = 7;
    call.rank = rank;
    call.nranks = 2;
    stage.onNcclCall(call);
    ApiCallEvent launch;
    launch.kind = v1::API_KIND_LAUNCH;
    launch.thread_id = 10;
    launch.start_ns = us(start_us - 48);
    launch.end_ns = us(start_us - 42);
    launch.correlation_id = correlation;
    stage.onApiCall(launch);
    DeviceActivityEvent compute;  // not NCCL: ignored
    compute.kind = v1::ACTIVITY_KIND_KERNEL;
    compute.name_id = 2;
    compute.start_ns = us(start_us - 30);
    compute.end_ns = us(start_us - 20);
    stage.onActivity(compute);
    DeviceActivityEvent kernel;
    kernel.kind = v1::ACTIVITY_KIND_KERNEL;
    kernel.name_id = 1;
    kernel.stream = 7;
    kernel.start_ns = us(start_us);
    kernel.end_ns = us(start_us + 100);
    kernel.correlation_id = correlation++;
    stage.onActivity(kernel);
  }
  stage.finish();
  ProcessAnalysis result;
  result.host = "node0";  // the pipeline fills rank and host from Hello; rank left out here
  stage.contribute(result);
  return stage.take();
}

}  // namespace

TEST_CASE("the arrival stage keeps each communicator's NCCL kernels for the combination", "[cross_rank]") {
  const RankCollectives rank0 = summaryOf(0, {1000, 2000});
  REQUIRE(rank0.communicators.size() == 1);
  CHECK(rank0.rank == 0);  // from the NCCL calls, as Hello gave none
  CHECK(rank0.host == "node0");
  CHECK(rank0.communicators[0].nranks == 2);
  CHECK(rank0.communicators[0].starts_ns == std::vector<uint64_t>{us(1000), us(2000)});

  const std::vector<RankWait> waits = attributeRankWaits({rank0, summaryOf(1, {1070, 1990})});
  CHECK(waitOf(waits, 1).waited_for_ns == us(70));
  CHECK(waitOf(waits, 0).waited_for_ns == us(10));
}

TEST_CASE("each rank's lateness is its start less the median of the others', summarized by median and MAD",
          "[cross_rank]") {
  // Collective 0: rank 2 last (45 us after the median of 100 and 110). Collective 1: all at once,
  // nobody waited. Collective 2: rank 0 last, 20 us after the other two.
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm({100, 300, 520}, {200, 400, 600}, "", 3)}),
      rankWith(1, {comm({110, 300, 500}, {200, 400, 600}, "", 3)}),
      rankWith(2, {comm({150, 300, 500}, {200, 400, 600}, "", 3)}),
  });
  REQUIRE(waits.size() == 3);
  // The sign test's trials: the two collectives in which someone waited, a third of them each by chance.
  for (const RankWait& w : waits) {
    CHECK(w.collectives == 2);
    CHECK(w.expected_last == Approx(2.0 / 3));
  }
  CHECK(waitOf(waits, 2).collectives_last == 1);
  CHECK(waitOf(waits, 0).collectives_last == 1);
  // Rank 0: -30, 0, +20 us -> median 0, MAD 20. Rank 1: -15, 0, -10 -> median -10, MAD 5.
  // Rank 2: +45, 0, -10 -> median 0, MAD 10.
  CHECK(waitOf(waits, 0).lateness_median_ns == 0);
  CHECK(waitOf(waits, 0).lateness_mad_ns == us(20));
  CHECK(waitOf(waits, 1).lateness_median_ns == -static_cast<int64_t>(us(10)));
  CHECK(waitOf(waits, 1).lateness_mad_ns == us(5));
  CHECK(waitOf(waits, 2).lateness_median_ns == 0);
  CHECK(waitOf(waits, 2).lateness_mad_ns == us(10));
  // Means: rank 0 (-30 + 0 + 20) / 3, rank 2 (45 + 0 - 10) / 3. Three collectives are too few for
  // the batch means the test needs.
  CHECK(waitOf(waits, 0).lateness_collectives == 3);
  CHECK(waitOf(waits, 0).lateness_mean_ns == Approx(-10'000.0 / 3));
  CHECK(waitOf(waits, 2).lateness_mean_ns == Approx(35'000.0 / 3));
  CHECK(waitOf(waits, 2).lateness_batches == 0);
}

TEST_CASE("the lateness's standard error comes from batch means of consecutive collectives", "[cross_rank]") {
  // Rank 1 is 10 us late in the first half of 40 collectives and 30 us in the second: 20 batches
  // of 2, ten with mean 10 us and ten with 30 us; their standard deviation sqrt(100 * 20 / 19) us,
  // over sqrt(20).
  std::vector<uint64_t> starts0, starts1, ends;
  for (uint64_t k = 0; k < 40; ++k) {
    starts0.push_back(1'000 * k);
    starts1.push_back(1'000 * k + (k < 20 ? 10 : 30));
    ends.push_back(1'000 * k + 500);
  }
  const std::vector<RankWait> waits = attributeRankWaits({rankWith(0, {comm(starts0, ends)}), rankWith(1, {comm(starts1, ends)})});
  const RankWait& late = waitOf(waits, 1);
  CHECK(late.lateness_collectives == 40);
  CHECK(late.lateness_batches == kStragglerBatches);
  CHECK(late.lateness_mean_ns == Approx(us(20)));
  CHECK(late.lateness_se_ns == Approx(1'000.0 * std::sqrt(100.0 * 20 / 19) / std::sqrt(20.0)));
  CHECK(waitOf(waits, 0).lateness_mean_ns == Approx(-static_cast<double>(us(20))));
}

TEST_CASE("the batch means take a rank's collectives in time order, across its communicators", "[cross_rank]") {
  // Two communicators used in turn, 40 collectives each: rank 1 is 10 us late in every "world"
  // collective and 30 us late in every "tp" one. In time order each batch of 4 holds two of each
  // (every batch mean 20 us, no spread); taken communicator by communicator, the batches would be
  // ten of 10 us and ten of 30 us.
  std::vector<uint64_t> world0, world1, world_ends, tp0, tp1, tp_ends;
  for (uint64_t k = 0; k < 40; ++k) {
    world0.push_back(2'000 * k);
    world1.push_back(2'000 * k + 10);
    world_ends.push_back(2'000 * k + 500);
    tp0.push_back(2'000 * k + 1'000);
    tp1.push_back(2'000 * k + 1'030);
    tp_ends.push_back(2'000 * k + 1'500);
  }
  const std::vector<RankWait> waits = attributeRankWaits({
      rankWith(0, {comm(world0, world_ends, "world"), comm(tp0, tp_ends, "tp")}),
      rankWith(1, {comm(world1, world_ends, "world"), comm(tp1, tp_ends, "tp")}),
  });
  const RankWait& late = waitOf(waits, 1);
  CHECK(late.lateness_collectives == 80);
  CHECK(late.lateness_batches == kStragglerBatches);
  CHECK(late.lateness_mean_ns == Approx(us(20)));
  CHECK(late.lateness_se_ns == Approx(0.0).margin(1e-6));
}
