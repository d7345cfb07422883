#include "workload_runner.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <barrier>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "host_work.h"
#include "kernel_registry.h"
#include "simcuda/timeline.h"

namespace gapwatch_sim {

namespace {

int32_t current_tid() { return int32_t(syscall(SYS_gettid)); }

// Nothing can be retried in a simulated run, and a worker thread cannot unwind through a barrier
// the others wait on: the first failure ends the process.
[[noreturn]] void fail_run(const Scenario& s, const std::string& message) {
  std::fprintf(stderr, "gapwatch-sim: %s: %s\n", s.file.c_str(), message.c_str());
  std::fflush(stderr);
  _exit(1);
}

uint64_t us_to_ns(double us) { return uint64_t(std::llround(us * 1000.0)); }

// What every thread of the process shares: created by the main thread before the steps.
struct SharedResources {
  const Scenario& scenario;
  KernelRegistry kernels;
  std::vector<cudaStream_t> streams;  // [0] is the legacy default stream
  std::vector<cudaEvent_t> events;
  int device = 0;
  char* device_buffer = nullptr;
  char* pinned_buffer = nullptr;
  std::vector<char> pageable_buffer;
  ncclComm_t comm = nullptr;
  int world_size = 1;
  int rank = 0;

  explicit SharedResources(const Scenario& s) : scenario(s), kernels(s.kernels) {}
};

class ThreadRunner {
 public:
  ThreadRunner(SharedResources& shared, int thread_index, double host_scale)
      : shared_(shared), s_(shared.scenario), host_scale_(host_scale) {
    // One stream of random numbers per rank and thread, so a rerun draws the same durations.
    std::seed_seq seq{s_.seed, uint64_t(shared.rank), uint64_t(thread_index)};
    rng_.seed(seq);
  }

  void run_list(const std::vector<Op>& ops, int64_t step) {
    std::vector<void*> allocated;  // a free only frees what its own list allocated
    for (const Op& op : ops) {
      if (step >= 0 && !runs_at_step(op, step)) continue;
      run_op(op, step, allocated);
    }
    leftovers_.insert(leftovers_.end(), allocated.begin(), allocated.end());
  }

  void set_device() { check(cudaSetDevice(shared_.device), "cudaSetDevice", nullptr); }
  std::vector<HostSpan>& spans() { return spans_; }
  std::vector<void*>& leftovers() { return leftovers_; }
  std::vector<pid_t>& pending_workers() { return pending_workers_; }
  int64_t workers_forked() const { return workers_forked_; }

 private:
  void check(cudaError_t error, const char* call, const Op* op) {
    if (error == cudaSuccess) return;
    fail_run(s_, std::string(call) + " failed" + (op ? " at " + op->path : std::string()) + ": " +
                     cudaGetErrorString(error));
  }

  void check_nccl(ncclResult_t result, const char* call, const Op& op) {
    if (result == ncclSuccess) return;
    fail_run(s_, std::string(call) + " failed at " + op.path + ": ncclResult_t " + std::to_string(int(result)));
  }

  double jittered(double value, double jitter) {
    if (jitter <= 0) return value;
    double u = std::generate_canonical<double, 53>(rng_);
    return std::max(0.0, value + jitter * (2.0 * u - 1.0));
  }

  void host_span(const std::string& label, uint64_t start, uint64_t end, uint64_t requested) {
    spans_.push_back(HostSpan{current_tid(), label, start, end, requested});
  }

  cudaStream_t stream(const Op& op) const { return shared_.streams[size_t(op.stream)]; }

  void* host_buffer(HostMemory memory) {
    return memory == HostMemory::Pinned ? static_cast<void*>(shared_.pinned_buffer)
                                        : static_cast<void*>(shared_.pageable_buffer.data());
  }

  void run_op(const Op& op, int64_t step, std::vector<void*>& allocated) {
    char* dev = shared_.device_buffer;
    switch (op.kind) {
      case OpKind::Host: {
        uint64_t ns = us_to_ns(jittered(op.duration_us, op.jitter_us) * host_scale_);
        uint64_t start = monotonic_ns();
        do_host_work(ns);
        host_span(op.label, start, monotonic_ns(), ns);
        break;
      }
      case OpKind::Kernel: {
        const KernelDef& k = s_.kernels[size_t(op.kernel)];
        for (int64_t i = 0; i < op.count; ++i) {
          int64_t ns = int64_t(us_to_ns(jittered(k.duration_us, k.jitter_us)));
          check(shared_.kernels.launch(op.kernel, op.launch, ns, stream(op)), "kernel launch", &op);
        }
        break;
      }
      case OpKind::Copy: {
        void* dst;
        const void* src;
        cudaMemcpyKind kind;
        switch (op.direction) {
          case CopyDirection::H2D: dst = dev, src = host_buffer(op.memory), kind = cudaMemcpyHostToDevice; break;
          case CopyDirection::D2H: dst = host_buffer(op.memory), src = dev, kind = cudaMemcpyDeviceToHost; break;
          default: dst = dev, src = dev + op.bytes, kind = cudaMemcpyDeviceToDevice; break;
        }
        for (int64_t i = 0; i < op.count; ++i) {
          if (op.async) check(cudaMemcpyAsync(dst, src, op.bytes, kind, stream(op)), "cudaMemcpyAsync", &op);
          else check(cudaMemcpy(dst, src, op.bytes, kind), "cudaMemcpy", &op);
        }
        break;
      }
      case OpKind::Memset:
        for (int64_t i = 0; i < op.count; ++i) {
          if (op.async) check(cudaMemsetAsync(dev, 0, op.bytes, stream(op)), "cudaMemsetAsync", &op);
          else check(cudaMemset(dev, 0, op.bytes), "cudaMemset", &op);
        }
        break;
      case OpKind::Sync:
        switch (op.sync) {
          case SyncKind::Device: check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", &op); break;
          case SyncKind::Stream: check(cudaStreamSynchronize(stream(op)), "cudaStreamSynchronize", &op); break;
          case SyncKind::Event:
            check(cudaEventSynchronize(shared_.events[size_t(op.event)]), "cudaEventSynchronize", &op);
            break;
          case SyncKind::Item:
            // tensor.item(): a copy into a pageable CPU tensor, then a wait for the stream.
            check(cudaMemcpyAsync(shared_.pageable_buffer.data(), dev, op.bytes, cudaMemcpyDeviceToHost, stream(op)),
                  "cudaMemcpyAsync", &op);
            check(cudaStreamSynchronize(stream(op)), "cudaStreamSynchronize", &op);
            break;
        }
        break;
      case OpKind::Record:
        check(cudaEventRecord(shared_.events[size_t(op.event)], stream(op)), "cudaEventRecord", &op);
        break;
      case OpKind::Wait:
        check(cudaStreamWaitEvent(stream(op), shared_.events[size_t(op.event)], 0), "cudaStreamWaitEvent", &op);
        break;
      case OpKind::Malloc:
        for (int64_t i = 0; i < op.count; ++i) {
          void* p = nullptr;
          check(cudaMalloc(&p, op.bytes), "cudaMalloc", &op);
          allocated.push_back(p);
        }
        break;
      case OpKind::Free:
        for (int64_t i = 0; i < op.count; ++i) {
          void* p = allocated.back();  // validation guarantees there is one
          allocated.pop_back();
          check(cudaFree(p), "cudaFree", &op);
        }
        break;
      case OpKind::Nccl:
        for (int64_t i = 0; i < op.count; ++i) run_nccl(op);
        break;
      case OpKind::ForkWorkers: {
        uint64_t start = monotonic_ns();
        if (!reap_workers(pending_workers_, false)) fail_run(s_, "a worker process failed (" + op.path + ")");
        std::vector<pid_t> pids = fork_workers(op.workers, us_to_ns(op.duration_us));
        workers_forked_ += int64_t(pids.size());
        if (int64_t(pids.size()) != op.workers) fail_run(s_, "fork failed at " + op.path);
        if (op.wait) {
          if (!reap_workers(pids, true)) fail_run(s_, "a worker process failed (" + op.path + ")");
        } else {
          pending_workers_.insert(pending_workers_.end(), pids.begin(), pids.end());
        }
        host_span("fork_workers", start, monotonic_ns(), op.wait ? us_to_ns(op.duration_us) : 0);
        break;
      }
      case OpKind::Repeat:
        for (int64_t i = 0; i < op.count; ++i) run_list(op.body, step);
        break;
    }
  }

  void run_nccl(const Op& op) {
    char* buf = shared_.device_buffer;
    ncclComm_t comm = shared_.comm;
    cudaStream_t st = stream(op);
    size_t count = op.bytes / 4;
    size_t per_rank = count / size_t(shared_.world_size);
    switch (op.nccl) {
      case NcclKind::AllReduce:
        check_nccl(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, st), "ncclAllReduce", op);
        break;
      case NcclKind::Broadcast:
        check_nccl(ncclBroadcast(buf, buf, count, ncclFloat32, op.root, comm, st), "ncclBroadcast", op);
        break;
      case NcclKind::Reduce:
        check_nccl(ncclReduce(buf, buf, count, ncclFloat32, ncclSum, op.root, comm, st), "ncclReduce", op);
        break;
      case NcclKind::AllGather:
        check_nccl(ncclAllGather(buf + per_rank * 4 * size_t(shared_.rank), buf, per_rank, ncclFloat32, comm, st),
                   "ncclAllGather", op);
        break;
      case NcclKind::ReduceScatter:
        check_nccl(ncclReduceScatter(buf, buf + per_rank * 4 * size_t(shared_.rank), per_rank, ncclFloat32, ncclSum,
                                     comm, st),
                   "ncclReduceScatter", op);
        break;
      case NcclKind::SendRecv: {
        // A ring exchange: send to the next rank, receive from the previous one, in one group.
        int next = (shared_.rank + 1) % shared_.world_size;
        int prev = (shared_.rank + shared_.world_size - 1) % shared_.world_size;
        check_nccl(ncclGroupStart(), "ncclGroupStart", op);
        check_nccl(ncclSend(buf, count, ncclFloat32, next, comm, st), "ncclSend", op);
        check_nccl(ncclRecv(buf + op.bytes, count, ncclFloat32, prev, comm, st), "ncclRecv", op);
        check_nccl(ncclGroupEnd(), "ncclGroupEnd", op);
        break;
      }
    }
  }

  SharedResources& shared_;
  const Scenario& s_;
  double host_scale_;
  std::mt19937_64 rng_;
  std::vector<HostSpan> spans_;
  std::vector<void*> leftovers_;
  std::vector<pid_t> pending_workers_;
  int64_t workers_forked_ = 0;
};

void check_setup(const Scenario& s, cudaError_t error, const char* call) {
  if (error != cudaSuccess) fail_run(s, std::string(call) + " failed during set-up: " + cudaGetErrorString(error));
}

void check_setup_nccl(const Scenario& s, ncclResult_t result, const char* call) {
  if (result != ncclSuccess) fail_run(s, std::string(call) + " failed: ncclResult_t " + std::to_string(int(result)));
}

std::vector<int> kernels_loaded_at(const Scenario& s, int phase) {
  std::vector<int> out;
  for (size_t k = 0; k < s.kernels.size(); ++k)
    if (s.kernels[k].load_phase == phase) out.push_back(int(k));
  return out;
}

}  // namespace

RunRecord run_workload(const Scenario& s, const RankInfo& rank) {
  RunRecord record;
  SimDeviceConfig device = s.device;
  simcuda_configure(&device);

  SharedResources shared(s);
  shared.rank = rank.rank;
  shared.world_size = rank.world_size;
  // nvcc registers a binary's kernels before main(); the start-up module is the program's own.
  shared.kernels.load_module(kernels_loaded_at(s, -1));

  int device_count = 0;
  check_setup(s, cudaGetDeviceCount(&device_count), "cudaGetDeviceCount");
  shared.device = device_count > 0 ? rank.local_rank % device_count : 0;
  check_setup(s, cudaSetDevice(shared.device), "cudaSetDevice");
  shared.streams.push_back(nullptr);
  for (size_t i = 0; i < s.streams.size(); ++i) {
    cudaStream_t st = nullptr;
    // Side streams as PyTorch creates them: no implicit ordering with the legacy default stream.
    check_setup(s, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    shared.streams.push_back(st);
  }
  for (size_t i = 0; i < s.events.size(); ++i) {
    cudaEvent_t ev = nullptr;
    check_setup(s, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    shared.events.push_back(ev);
  }
  if (s.max_device_bytes > 0) {
    void* p = nullptr;
    // Twice the largest transfer: room for distinct source and destination halves.
    check_setup(s, cudaMalloc(&p, 2 * s.max_device_bytes), "cudaMalloc");
    shared.device_buffer = static_cast<char*>(p);
  }
  if (s.max_pinned_bytes > 0) {
    void* p = nullptr;
    check_setup(s, cudaMallocHost(&p, s.max_pinned_bytes), "cudaMallocHost");
    shared.pinned_buffer = static_cast<char*>(p);
  }
  shared.pageable_buffer.resize(std::max<uint64_t>(s.max_pageable_bytes, 1));
  if (s.uses_nccl) {
    ncclUniqueId id{};
    if (rank.nccl_id) id = *rank.nccl_id;
    else check_setup_nccl(s, ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_setup_nccl(s, ncclCommInitRank(&shared.comm, rank.world_size, id, rank.rank), "ncclCommInitRank");
  }

  double host_scale = s.host_scale(rank.rank);
  std::vector<std::unique_ptr<ThreadRunner>> runners;
  for (size_t t = 0; t < s.threads.size(); ++t)
    runners.push_back(std::make_unique<ThreadRunner>(shared, int(t), host_scale));
  ThreadRunner& main_runner = *runners[0];
  record.threads.push_back(ThreadInfo{s.threads[0].name, current_tid()});

  if (s.warmup) {
    shared.kernels.load_module(s.warmup->load);
    main_runner.run_list(s.warmup->ops, -1);
  }

  std::barrier step_barrier(std::ptrdiff_t(s.threads.size()));
  std::vector<std::thread> threads;
  std::vector<int32_t> tids(s.threads.size(), 0);
  for (size_t t = 1; t < s.threads.size(); ++t) {
    threads.emplace_back([&, t] {
      tids[t] = current_tid();
      ThreadRunner& runner = *runners[t];
      runner.set_device();  // the current device is per thread in the runtime
      for (int64_t step = 0; step < s.steps; ++step) {
        step_barrier.arrive_and_wait();
        runner.run_list(s.threads[t].ops, step);
      }
    });
  }
  for (int64_t step = 0; step < s.steps; ++step) {
    record.step_starts_ns.push_back(monotonic_ns());
    for (const Phase& recompile : s.recompiles) {
      if (recompile.at_step != step) continue;
      main_runner.run_list(recompile.ops, -1);
      shared.kernels.load_module(recompile.load);
      // torch.compile's new kernels come from Triton, whose launcher loads each compiled kernel's
      // cubin with cuModuleLoadData (a traced driver call) once it is compiled, before the first
      // launch: the recording's evidence that the gap was a compile.
      if (!recompile.load.empty()) {
        static const char kCompiledPtx[] =
            ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry triton_recompiled()\n{\n  ret;\n}\n";
        CUmodule module = nullptr;
        if (cuModuleLoadData(&module, kCompiledPtx) != CUDA_SUCCESS) fail_run(s, "cuModuleLoadData failed");
      }
    }
    if (threads.size()) step_barrier.arrive_and_wait();
    main_runner.run_list(s.threads[0].ops, step);
  }
  for (auto& t : threads) t.join();
  for (size_t t = 1; t < s.threads.size(); ++t) record.threads.push_back(ThreadInfo{s.threads[t].name, tids[t]});
  if (!reap_workers(main_runner.pending_workers(), true)) fail_run(s, "a worker process failed");

  check_setup(s, cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  // Teardown, in the order a tidy program releases things.
  for (auto& runner : runners)
    for (void* p : runner->leftovers()) check_setup(s, cudaFree(p), "cudaFree");
  if (shared.comm) check_setup_nccl(s, ncclCommDestroy(shared.comm), "ncclCommDestroy");
  if (shared.pinned_buffer) check_setup(s, cudaFreeHost(shared.pinned_buffer), "cudaFreeHost");
  if (shared.device_buffer) check_setup(s, cudaFree(shared.device_buffer), "cudaFree");
  for (cudaEvent_t ev : shared.events) check_setup(s, cudaEventDestroy(ev), "cudaEventDestroy");
  for (size_t i = 1; i < shared.streams.size(); ++i) check_setup(s, cudaStreamDestroy(shared.streams[i]), "cudaStreamDestroy");

  for (auto& runner : runners) {
    record.host_spans.insert(record.host_spans.end(), runner->spans().begin(), runner->spans().end());
    record.workers_forked += runner->workers_forked();
  }
  return record;
}

}  // namespace gapwatch_sim
