// CUDA graphs built both ways, each launched three times: first node by node (copy in, memset,
// two kernels, copy out, host node), cloned and instantiated; then by capturing a stream that forks
// work onto two more streams through events and joins them back.
//
// Per launch each graph runs two kernels, two copies and one memset: 2 graphs x 3 launches.
// The two launches made during capture are recorded calls that launch nothing by themselves.
// gapwatch-expect: api.graph_launch=6 api.launch=2 api.memcpy_async=2 api.memset_async=1 api.stream_sync=2
// gapwatch-expect: device.kernel=12 device.memcpy=12 device.memset=6
// Captured: 2 launches, 2 async copies, 1 memset, 3 event records, 4 stream waits.
// gapwatch-expect: report.launches=6 report.graph_launches=6 report.captured_calls=12
// gapwatch-output: both graphs ran 3 times
#include <string.h>

#include <vector>

#include "sample_helpers.h"

#define THREADS_PER_BLOCK 512
#define GRAPH_LAUNCH_ITERATIONS 3

__global__ void reduce(const float* inputVec, double* outputVec, size_t inputSize, size_t outputSize) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < outputSize) outputVec[i] = i < inputSize ? inputVec[i] : 0.0;
}

__global__ void reduceFinal(double* inputVec, double* result, size_t inputSize) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *result = inputSize ? inputVec[0] : 0.0;
}

int g_host_node_runs = 0;
void CUDART_CB myHostNodeCallback(void* data) { ++*static_cast<int*>(data); }

void cudaGraphsManual(float* inputVec_h, float* inputVec_d, double* outputVec_d, double* result_d, size_t inputSize,
                      size_t numOfBlocks) {
  cudaStream_t streamForGraph;
  cudaGraph_t graph;
  std::vector<cudaGraphNode_t> nodeDependencies;
  cudaGraphNode_t memcpyNode, kernelNode, memsetNode;
  double result_h = 0.0;
  checkCudaErrors(cudaStreamCreate(&streamForGraph));

  cudaKernelNodeParams kernelNodeParams = {};
  cudaMemcpy3DParms memcpyParams = {};
  cudaMemsetParams memsetParams = {};

  memcpyParams.srcPtr = make_cudaPitchedPtr(inputVec_h, sizeof(float) * inputSize, inputSize, 1);
  memcpyParams.dstPtr = make_cudaPitchedPtr(inputVec_d, sizeof(float) * inputSize, inputSize, 1);
  memcpyParams.extent = make_cudaExtent(sizeof(float) * inputSize, 1, 1);
  memcpyParams.kind = cudaMemcpyHostToDevice;

  memsetParams.dst = (void*)outputVec_d;
  memsetParams.value = 0;
  memsetParams.pitch = 0;
  memsetParams.elementSize = sizeof(float);
  memsetParams.width = numOfBlocks * 2;
  memsetParams.height = 1;

  checkCudaErrors(cudaGraphCreate(&graph, 0));
  checkCudaErrors(cudaGraphAddMemcpyNode(&memcpyNode, graph, nullptr, 0, &memcpyParams));
  checkCudaErrors(cudaGraphAddMemsetNode(&memsetNode, graph, nullptr, 0, &memsetParams));
  nodeDependencies.push_back(memsetNode);
  nodeDependencies.push_back(memcpyNode);

  void* kernelArgs[4] = {(void*)&inputVec_d, (void*)&outputVec_d, &inputSize, &numOfBlocks};
  kernelNodeParams.func = (void*)reduce;
  kernelNodeParams.gridDim = dim3(numOfBlocks, 1, 1);
  kernelNodeParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
  kernelNodeParams.sharedMemBytes = 0;
  kernelNodeParams.kernelParams = (void**)kernelArgs;
  kernelNodeParams.extra = nullptr;
  checkCudaErrors(
      cudaGraphAddKernelNode(&kernelNode, graph, nodeDependencies.data(), nodeDependencies.size(), &kernelNodeParams));
  nodeDependencies.clear();
  nodeDependencies.push_back(kernelNode);

  memset(&kernelNodeParams, 0, sizeof(kernelNodeParams));
  kernelNodeParams.func = (void*)reduceFinal;
  kernelNodeParams.gridDim = dim3(1, 1, 1);
  kernelNodeParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
  void* kernelArgs2[3] = {(void*)&outputVec_d, (void*)&result_d, &numOfBlocks};
  kernelNodeParams.kernelParams = kernelArgs2;
  checkCudaErrors(
      cudaGraphAddKernelNode(&kernelNode, graph, nodeDependencies.data(), nodeDependencies.size(), &kernelNodeParams));
  nodeDependencies.clear();
  nodeDependencies.push_back(kernelNode);

  memset(&memcpyParams, 0, sizeof(memcpyParams));
  memcpyParams.srcPtr = make_cudaPitchedPtr(result_d, sizeof(double), 1, 1);
  memcpyParams.dstPtr = make_cudaPitchedPtr(&result_h, sizeof(double), 1, 1);
  memcpyParams.extent = make_cudaExtent(sizeof(double), 1, 1);
  memcpyParams.kind = cudaMemcpyDeviceToHost;
  checkCudaErrors(
      cudaGraphAddMemcpyNode(&memcpyNode, graph, nodeDependencies.data(), nodeDependencies.size(), &memcpyParams));
  nodeDependencies.clear();
  nodeDependencies.push_back(memcpyNode);

  cudaGraphNode_t hostNode;
  cudaHostNodeParams hostParams = {};
  hostParams.fn = myHostNodeCallback;
  hostParams.userData = &g_host_node_runs;
  checkCudaErrors(cudaGraphAddHostNode(&hostNode, graph, nodeDependencies.data(), nodeDependencies.size(), &hostParams));

  size_t numNodes = 0;
  checkCudaErrors(cudaGraphGetNodes(graph, nullptr, &numNodes));
  printf("Num of nodes in the graph created manually = %zu\n", numNodes);

  cudaGraph_t clonedGraph;
  cudaGraphExec_t clonedGraphExec;
  checkCudaErrors(cudaGraphClone(&clonedGraph, graph));
  checkCudaErrors(cudaGraphInstantiate(&clonedGraphExec, clonedGraph, 0));
  for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) checkCudaErrors(cudaGraphLaunch(clonedGraphExec, streamForGraph));
  checkCudaErrors(cudaStreamSynchronize(streamForGraph));

  checkCudaErrors(cudaGraphExecDestroy(clonedGraphExec));
  checkCudaErrors(cudaGraphDestroy(graph));
  checkCudaErrors(cudaGraphDestroy(clonedGraph));
  checkCudaErrors(cudaStreamDestroy(streamForGraph));
}

void cudaGraphsUsingStreamCapture(float* inputVec_h, float* inputVec_d, double* outputVec_d, double* result_d,
                                  size_t inputSize, size_t numOfBlocks) {
  cudaStream_t stream1, stream2, stream3, streamForGraph;
  cudaEvent_t forkStreamEvent, memsetEvent1, memsetEvent2;
  cudaGraph_t graph;
  double result_h = 0.0;
  checkCudaErrors(cudaStreamCreate(&stream1));
  checkCudaErrors(cudaStreamCreate(&stream2));
  checkCudaErrors(cudaStreamCreate(&stream3));
  checkCudaErrors(cudaStreamCreate(&streamForGraph));
  checkCudaErrors(cudaEventCreate(&forkStreamEvent));
  checkCudaErrors(cudaEventCreate(&memsetEvent1));
  checkCudaErrors(cudaEventCreate(&memsetEvent2));

  checkCudaErrors(cudaStreamBeginCapture(stream1, cudaStreamCaptureModeGlobal));
  checkCudaErrors(cudaEventRecord(forkStreamEvent, stream1));
  checkCudaErrors(cudaStreamWaitEvent(stream2, forkStreamEvent, 0));
  checkCudaErrors(cudaStreamWaitEvent(stream3, forkStreamEvent, 0));

  checkCudaErrors(cudaMemcpyAsync(inputVec_d, inputVec_h, sizeof(float) * inputSize, cudaMemcpyDefault, stream1));
  checkCudaErrors(cudaMemsetAsync(outputVec_d, 0, sizeof(double) * numOfBlocks, stream2));
  checkCudaErrors(cudaEventRecord(memsetEvent1, stream2));
  checkCudaErrors(cudaEventRecord(memsetEvent2, stream3));  // stream3 only joins back

  checkCudaErrors(cudaStreamWaitEvent(stream1, memsetEvent1, 0));
  reduce<<<numOfBlocks, THREADS_PER_BLOCK, 0, stream1>>>(inputVec_d, outputVec_d, inputSize, numOfBlocks);
  checkCudaErrors(cudaStreamWaitEvent(stream1, memsetEvent2, 0));
  reduceFinal<<<1, THREADS_PER_BLOCK, 0, stream1>>>(outputVec_d, result_d, numOfBlocks);
  checkCudaErrors(cudaMemcpyAsync(&result_h, result_d, sizeof(double), cudaMemcpyDefault, stream1));
  checkCudaErrors(cudaLaunchHostFunc(stream1, myHostNodeCallback, &g_host_node_runs));
  checkCudaErrors(cudaStreamEndCapture(stream1, &graph));

  cudaGraphNode_t* nodes = nullptr;
  size_t numNodes = 0;
  checkCudaErrors(cudaGraphGetNodes(graph, nodes, &numNodes));
  printf("Num of nodes in the graph created using stream capture API = %zu\n", numNodes);

  cudaGraphExec_t graphExec;
  checkCudaErrors(cudaGraphInstantiate(&graphExec, graph, 0));
  for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) checkCudaErrors(cudaGraphLaunch(graphExec, streamForGraph));
  checkCudaErrors(cudaStreamSynchronize(streamForGraph));

  checkCudaErrors(cudaGraphExecDestroy(graphExec));
  checkCudaErrors(cudaGraphDestroy(graph));
  checkCudaErrors(cudaStreamDestroy(stream1));
  checkCudaErrors(cudaStreamDestroy(stream2));
  checkCudaErrors(cudaStreamDestroy(stream3));
  checkCudaErrors(cudaStreamDestroy(streamForGraph));
  checkCudaErrors(cudaEventDestroy(forkStreamEvent));
  checkCudaErrors(cudaEventDestroy(memsetEvent1));
  checkCudaErrors(cudaEventDestroy(memsetEvent2));
}

int main() {
  size_t size = 1 << 24;
  size_t maxBlocks = 512;
  findCudaDevice();
  printf("%zu elements, threads per block = %d, graph launch iterations = %d\n", size, THREADS_PER_BLOCK,
         GRAPH_LAUNCH_ITERATIONS);
  float *inputVec_d = nullptr, *inputVec_h = nullptr;
  double *outputVec_d = nullptr, *result_d;
  checkCudaErrors(cudaMallocHost(&inputVec_h, sizeof(float) * size));
  checkCudaErrors(cudaMalloc(&inputVec_d, sizeof(float) * size));
  checkCudaErrors(cudaMalloc(&outputVec_d, sizeof(double) * maxBlocks));
  checkCudaErrors(cudaMalloc(&result_d, sizeof(double)));
  for (size_t i = 0; i < size; i++) inputVec_h[i] = rand() / (float)RAND_MAX;

  cudaGraphsManual(inputVec_h, inputVec_d, outputVec_d, result_d, size, maxBlocks);
  cudaGraphsUsingStreamCapture(inputVec_h, inputVec_d, outputVec_d, result_d, size, maxBlocks);

  checkCudaErrors(cudaFree(inputVec_d));
  checkCudaErrors(cudaFree(outputVec_d));
  checkCudaErrors(cudaFree(result_d));
  checkCudaErrors(cudaFreeHost(inputVec_h));
  printf("both graphs ran %d times, host nodes ran %d times\n", GRAPH_LAUNCH_ITERATIONS, g_host_node_runs);
  return g_host_node_runs == 2 * GRAPH_LAUNCH_ITERATIONS ? EXIT_SUCCESS : EXIT_FAILURE;
}
