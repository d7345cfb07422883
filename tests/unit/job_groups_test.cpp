// Which processes given together are one job (analysis/job_groups.h): the rules, one case each.
#include "analysis/job_groups.h"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t kS = 1'000'000'000ull;

struct Given {
  std::vector<ProcessAnalysis> processes;
  std::vector<RecordingOverview> overviews;

  // A recording of `rank` (none: no rank) on `host`, over [start, end) seconds of its recording
  // clock; `unix_start` seconds on the wall clock when its Hello says (0: it does not).
  Given& add(std::optional<int32_t> rank, std::optional<int32_t> world, uint64_t start, uint64_t end,
             uint64_t unix_start = 0, const std::string& host = "node1") {
    ProcessAnalysis p;
    p.pid = static_cast<uint32_t>(1000 + processes.size());
    p.host = host;
    p.rank = rank;
    processes.push_back(p);
    RecordingOverview o;
    v1::Hello hello;
    hello.set_pid(p.pid);
    hello.set_host(host);
    if (rank) hello.set_rank(*rank);
    if (world) hello.set_world_size(*world);
    hello.set_clock(v1::CLOCK_DOMAIN_MONOTONIC);
    hello.set_start_time_ns(start * kS);
    hello.set_start_unix_ns(unix_start * kS);
    o.hello = hello;
    o.span_start_ns = start * kS;
    o.span_end_ns = end * kS;
    overviews.push_back(o);
    return *this;
  }
  JobGroups groups() const { return groupIntoJobs(processes, overviews); }
};

using Jobs = std::vector<std::vector<std::size_t>>;

}  // namespace

TEST_CASE("the ranks of one run are one job, and nothing is said to split them") {
  const JobGroups g = Given{}.add(0, 4, 10, 20).add(1, 4, 10, 20).add(2, 4, 11, 19).add(3, 4, 10, 21).groups();
  CHECK(g.jobs == Jobs{{0, 1, 2, 3}});
  CHECK(g.why.empty());
}

TEST_CASE("one process is one job, and none is none") {
  CHECK(Given{}.add(std::nullopt, std::nullopt, 0, 1).groups().jobs == Jobs{{0}});
  CHECK(Given{}.groups().jobs.empty());
}

TEST_CASE("a rank there twice starts a second job, and its ranks join the job they fit") {
  // Two runs of a two-rank job, given in the order a directory listing gives them.
  const JobGroups g = Given{}.add(0, 2, 10, 20).add(0, 2, 10, 20).add(1, 2, 10, 20).add(1, 2, 10, 20).groups();
  CHECK(g.jobs == Jobs{{0, 2}, {1, 3}});
  CHECK(g.why == "rank 0 is there more than once");
}

TEST_CASE("processes without a rank are jobs of their own") {
  const JobGroups g = Given{}.add(std::nullopt, std::nullopt, 0, 10).add(std::nullopt, std::nullopt, 0, 10).groups();
  CHECK(g.jobs == Jobs{{0}, {1}});
  CHECK(g.why == "pid 1000 has no rank");
}

TEST_CASE("different world sizes, or a rank outside the world, are different jobs") {
  JobGroups g = Given{}.add(0, 2, 0, 10).add(1, 4, 0, 10).groups();
  CHECK(g.jobs == Jobs{{0}, {1}});
  CHECK(g.why == "world sizes 2 and 4 differ");
  g = Given{}.add(0, 2, 0, 10).add(2, std::nullopt, 0, 10).groups();
  CHECK(g.jobs == Jobs{{0}, {1}});
  CHECK(g.why == "rank 2 is outside a world of 2");
}

TEST_CASE("windows apart on the wall clock are different jobs, whatever their recording clocks say") {
  // Rank 1 started an hour after rank 0 had ended; their monotonic windows overlap (two hosts).
  const JobGroups g = Given{}.add(0, 2, 0, 100, 1'000'000, "a").add(1, 2, 50, 150, 1'003'700, "b").groups();
  CHECK(g.jobs == Jobs{{0}, {1}});
  CHECK(g.why == "rank 0 and rank 1 ran 1 h 00 min apart");
}

TEST_CASE("without a wall clock, recordings of one host apart on its monotonic clock are different jobs") {
  JobGroups g = Given{}.add(0, 2, 0, 10).add(1, 2, 20, 30).groups();
  CHECK(g.jobs == Jobs{{0}, {1}});
  CHECK(g.why == "rank 0 and rank 1 do not overlap in time");
  // Two hosts' monotonic clocks are not one clock: the ranks that fit are taken as one job.
  g = Given{}.add(0, 2, 0, 10, 0, "a").add(1, 2, 20, 30, 0, "b").groups();
  CHECK(g.jobs == Jobs{{0, 1}});
}

TEST_CASE("two runs of a two-rank job given together are two jobs of two ranks each") {
  // Run A at t = 1000 s, run B a day later, ranks interleaved as a glob of both would give them.
  const JobGroups g = Given{}
                          .add(0, 2, 0, 60, 1'000, "a")
                          .add(0, 2, 0, 60, 87'400, "a")
                          .add(1, 2, 0, 60, 1'000, "b")
                          .add(1, 2, 0, 60, 87'400, "b")
                          .groups();
  CHECK(g.jobs == Jobs{{0, 2}, {1, 3}});
}
