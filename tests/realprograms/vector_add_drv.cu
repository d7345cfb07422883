// Vector addition through the driver API only, as Triton, NCCL and the driver samples work: the
// primary context retained and made current, a module loaded from a PTX image read from disk (the
// file next to this program, or argv[1]), its function looked up by name, launched with
// cuLaunchKernel, copies and frees through cuMem*.
//
// gapwatch-expect: api.malloc=3 api.memcpy=3 api.launch=1 api.device_sync=1 api.free=3
// gapwatch-expect: device.kernel=1 device.memcpy=3
// gapwatch-expect: report.launches=1 report.steps=0
// gapwatch-output: VecAdd_kernel ran
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#define checkCudaErrors(call) checkDrv((call), #call, __LINE__)

static void checkDrv(CUresult result, const char* what, int line) {
  if (result == CUDA_SUCCESS) return;
  const char* name = "?";
  cuGetErrorName(result, &name);
  fprintf(stderr, "CUDA driver error %d (%s) at line %d: %s\n", int(result), name, line, what);
  exit(EXIT_FAILURE);
}

static std::string image_path(int argc, char** argv) {
  if (argc > 1) return argv[1];
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "vector_add_drv_kernel.ptx";
  exe[n] = '\0';
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/') + 1) + "vector_add_drv_kernel.ptx";
}

int main(int argc, char** argv) {
  const int N = 50000;
  const size_t size = N * sizeof(float);
  checkCudaErrors(cuInit(0));
  int count = 0;
  checkCudaErrors(cuDeviceGetCount(&count));
  CUdevice device;
  checkCudaErrors(cuDeviceGet(&device, 0));
  char name[256];
  checkCudaErrors(cuDeviceGetName(name, sizeof name, device));
  int major = 0, minor = 0;
  checkCudaErrors(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  checkCudaErrors(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  printf("> Using device 0: %s (compute capability %d.%d) of %d\n", name, major, minor, count);

  CUcontext context;
  checkCudaErrors(cuDevicePrimaryCtxRetain(&context, device));
  checkCudaErrors(cuCtxSetCurrent(context));

  std::string path = image_path(argc, argv);
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) {
    fprintf(stderr, "cannot open the kernel image %s\n", path.c_str());
    return EXIT_FAILURE;
  }
  std::vector<char> image;
  char buf[65536];
  for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) image.insert(image.end(), buf, buf + got);
  fclose(f);
  image.push_back('\0');  // PTX is loaded as a NUL-terminated string

  CUmodule module;
  CUfunction vecAdd;
  checkCudaErrors(cuModuleLoadData(&module, image.data()));
  checkCudaErrors(cuModuleGetFunction(&vecAdd, module, "VecAdd_kernel"));
  CUfunction missing;
  if (cuModuleGetFunction(&missing, module, "NoSuchKernel") == CUDA_SUCCESS) {
    fprintf(stderr, "cuModuleGetFunction found a kernel the image does not have\n");
    return EXIT_FAILURE;
  }

  std::vector<float> h_A(N, 1.0f), h_B(N, 2.0f), h_C(N, 0.0f);
  CUdeviceptr d_A, d_B, d_C;
  checkCudaErrors(cuMemAlloc(&d_A, size));
  checkCudaErrors(cuMemAlloc(&d_B, size));
  checkCudaErrors(cuMemAlloc(&d_C, size));
  checkCudaErrors(cuMemcpyHtoD(d_A, h_A.data(), size));
  checkCudaErrors(cuMemcpyHtoD(d_B, h_B.data(), size));

  int threadsPerBlock = 256, blocksPerGrid = (N + threadsPerBlock - 1) / threadsPerBlock;
  int n = N;
  void* args[] = {&d_A, &d_B, &d_C, &n};
  checkCudaErrors(cuLaunchKernel(vecAdd, blocksPerGrid, 1, 1, threadsPerBlock, 1, 1, 0, nullptr, args, nullptr));
  checkCudaErrors(cuCtxSynchronize());
  checkCudaErrors(cuMemcpyDtoH(h_C.data(), d_C, size));

  checkCudaErrors(cuMemFree(d_A));
  checkCudaErrors(cuMemFree(d_B));
  checkCudaErrors(cuMemFree(d_C));
  checkCudaErrors(cuModuleUnload(module));
  checkCudaErrors(cuDevicePrimaryCtxRelease(device));
  printf("VecAdd_kernel ran on %d blocks of %d threads\n", blocksPerGrid, threadsPerBlock);
  return 0;
}
