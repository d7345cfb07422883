// A program that uses only the CUDA driver API, as NVIDIA's vectorAddDrv sample does (a module from
// PTX, device memory, copies, launches, a stream, syncs), for driver_recording_test.py: gapwatch's
// recording of it must count its launches, copies and syncs. It prints what it did, one
// `name count` per line, so the test compares against the program's own count.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

const char kPtx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry vecAdd(\n"
    "  .param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)\n"
    "{\n"
    "  ret;\n"
    "}\n";

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
  exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 20;
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule module;
  check(cuModuleLoadData(&module, kPtx), "cuModuleLoadData");
  CUfunction f;
  check(cuModuleGetFunction(&f, module, "vecAdd"), "cuModuleGetFunction");

  const size_t n = 1 << 20, bytes = n * sizeof(float);
  CUdeviceptr a, b, c;
  check(cuMemAlloc(&a, bytes), "cuMemAlloc");
  check(cuMemAlloc(&b, bytes), "cuMemAlloc");
  check(cuMemAlloc(&c, bytes), "cuMemAlloc");
  float* host = nullptr;
  check(cuMemAllocHost(reinterpret_cast<void**>(&host), bytes), "cuMemAllocHost");
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  check(cuMemcpyHtoD(a, host, bytes), "cuMemcpyHtoD");
  check(cuMemcpyHtoDAsync(b, host, bytes, stream), "cuMemcpyHtoDAsync");
  unsigned count = unsigned(n);
  void* args[] = {&a, &b, &c, &count};
  for (int i = 0; i < launches; ++i)
    check(cuLaunchKernel(f, unsigned(n / 256), 1, 1, 256, 1, 1, 0, stream, args, nullptr), "cuLaunchKernel");
  CUevent done;
  check(cuEventCreate(&done, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventRecord(done, stream), "cuEventRecord");
  check(cuStreamWaitEvent(nullptr, done, 0), "cuStreamWaitEvent");
  check(cuMemsetD32(c, 0, n), "cuMemsetD32");
  check(cuMemsetD16Async(c, 0, 2 * n, stream), "cuMemsetD16Async");
  check(cuMemsetD8Async(c, 0, bytes, stream), "cuMemsetD8Async");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuEventSynchronize(done), "cuEventSynchronize");
  check(cuEventDestroy(done), "cuEventDestroy");
  check(cuMemcpyDtoH(host, c, bytes), "cuMemcpyDtoH");
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFreeHost(host), "cuMemFreeHost");
  check(cuMemFree(a), "cuMemFree");
  check(cuMemFree(b), "cuMemFree");
  check(cuMemFree(c), "cuMemFree");
  check(cuModuleUnload(module), "cuModuleUnload");
  printf("launch %d\nmemcpy 2\nmemcpy_async 1\nmemset 1\nmemset_async 2\nevent_record 1\n"
         "stream_wait_event 1\nstream_sync 1\nevent_sync 1\ndevice_sync 1\nmalloc 3\nfree 3\nhost_alloc 1\n"
         "host_free 1\n",
         launches);
  return 0;
}
