#include "rank_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace gapwatch_sim {

namespace {

// Environment variables a rank gets from its launcher; inherited values are replaced.
const char* const kRankEnv[] = {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "GAPWATCH_SIM_NCCL_ID="};

std::vector<std::string> rank_environment(int rank, int world, const std::string& id_hex) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const char* prefix : kRankEnv) replaced |= std::strncmp(*e, prefix, std::strlen(prefix)) == 0;
    if (!replaced) env.emplace_back(*e);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world));
  env.push_back(std::string(kNcclIdEnv) + "=" + id_hex);
  return env;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw LaunchError(std::string(name) + " is not set in a rank's environment");
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end || n < 0) throw LaunchError(std::string(name) + "=" + v + " is not a non-negative integer");
  return int(n);
}

// Removes the launcher's scratch directory however the launch ends.
struct ScratchDir {
  std::filesystem::path path;
  ~ScratchDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

std::string nccl_id_to_hex(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (char c : id.internal) {
    auto b = static_cast<unsigned char>(c);
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

std::optional<ncclUniqueId> nccl_id_from_hex(const std::string& hex) {
  ncclUniqueId id{};
  if (hex.size() != 2 * sizeof id.internal) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    id.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  return id;
}

RankInfo rank_from_environment(const Scenario& scenario) {
  RankInfo r;
  r.rank = env_int("RANK");
  r.local_rank = env_int("LOCAL_RANK");
  r.world_size = env_int("WORLD_SIZE");
  if (r.world_size != scenario.processes)
    throw LaunchError("WORLD_SIZE=" + std::to_string(r.world_size) + " but the scenario has " +
                      std::to_string(scenario.processes) + " processes");
  if (r.rank >= r.world_size) throw LaunchError("RANK=" + std::to_string(r.rank) + " is not below WORLD_SIZE");
  if (scenario.uses_nccl) {
    const char* hex = std::getenv(kNcclIdEnv);
    if (!hex) throw LaunchError(std::string(kNcclIdEnv) + " is not set in a rank's environment");
    r.nccl_id = nccl_id_from_hex(hex);
    if (!r.nccl_id) throw LaunchError(std::string(kNcclIdEnv) + " is not a hex NCCL unique id");
  }
  return r;
}

std::vector<nlohmann::ordered_json> run_ranks(const Scenario& scenario, const std::string& scenario_path) {
  ncclUniqueId id{};
  // One id for the whole job, made by the launcher as torchrun's rendezvous would hand it out.
  if (scenario.uses_nccl) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      throw LaunchError("ncclGetUniqueId failed: ncclResult_t " + std::to_string(int(r)));
  }
  std::string id_hex = nccl_id_to_hex(id);

  ScratchDir scratch;
  std::string tmpl = (std::filesystem::temp_directory_path() / "gapwatch-sim-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw LaunchError(std::string("cannot create a scratch directory: ") + std::strerror(errno));
  scratch.path = buf.data();

  std::vector<pid_t> pids;
  std::vector<std::string> outputs;
  auto stop_all = [&](pid_t except) {
    for (pid_t p : pids)
      if (p > 0 && p != except) kill(p, SIGTERM);
    for (pid_t p : pids)
      if (p > 0 && p != except) waitpid(p, nullptr, 0);
  };
  for (int rank = 0; rank < scenario.processes; ++rank) {
    outputs.push_back((scratch.path / ("rank-" + std::to_string(rank) + ".json")).string());
    std::vector<std::string> args = {"gapwatch-sim", scenario_path, "--rank-output", outputs.back(), "--quiet"};
    std::vector<std::string> env = rank_environment(rank, scenario.processes, id_hex);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execve("/proc/self/exe", argv.data(), envp.data());
      _exit(127);
    }
    if (pid < 0) {
      stop_all(-1);
      throw LaunchError(std::string("cannot start rank ") + std::to_string(rank) + ": " + std::strerror(errno));
    }
    pids.push_back(pid);
  }

  size_t running = pids.size();
  while (running > 0) {
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      throw LaunchError(std::string("waiting for the ranks: ") + std::strerror(errno));
    }
    auto it = std::find(pids.begin(), pids.end(), done);
    if (it == pids.end()) continue;  // not a rank (cannot happen: the launcher forks nothing else)
    int rank = int(it - pids.begin());
    --running;
    *it = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      // The others may wait for it in a collective forever.
      stop_all(-1);
      throw LaunchError("rank " + std::to_string(rank) + " failed (" + describe_status(status) + ")");
    }
  }

  std::vector<nlohmann::ordered_json> processes;
  for (int rank = 0; rank < scenario.processes; ++rank) {
    std::ifstream in(outputs[size_t(rank)]);
    if (!in) throw LaunchError("rank " + std::to_string(rank) + " wrote no truth");
    try {
      processes.push_back(nlohmann::ordered_json::parse(in));
    } catch (const nlohmann::json::exception& e) {
      throw LaunchError("rank " + std::to_string(rank) + " wrote an unreadable truth: " + e.what());
    }
  }
  return processes;
}

}  // namespace gapwatch_sim
