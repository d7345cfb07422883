// Kernels for driver_module_test: nvcc compiles this file to PTX, a cubin and fatbins at build
// time; the test loads them through cuModuleLoad* / cuLibraryLoad* and finds these names.
extern "C" __global__ void vecAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float* x, float f, int n) {  // _Z5scalePffi
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= f;
}

template <typename T>
__global__ void fill(T* x, T v) {
  x[threadIdx.x] = v;
}
template __global__ void fill<int>(int*, int);  // _Z4fillIiEvPT_S0_

// The simulator's duration-argument kernel: its first argument is its device time in ns.
__global__ void sim_kernel(long ns) {  // _Z10sim_kernell
  if (ns < 0) asm volatile("trap;");
}

__device__ __noinline__ float helper(float x) { return x * 2.0f; }  // a device function, not a kernel
__global__ void uses_helper(float* x) { x[0] = helper(x[1]); }      // _Z11uses_helperPf

__device__ int counter;
__device__ float table[16];
__constant__ float coeffs[8];
