// cudaGetErrorName and cudaGetErrorString for every cudaError_t of the CUDA 13.0 headers
// (driver_types.h, enum cudaError). The names are the enumerators. The strings follow the
// runtime's wording where the simulator knows it; the rest describe the enumerator in words
// (the CUDA runtime API reference gives each error's meaning, not its exact string). A value
// outside the enum is "unrecognized error code" for both, as the runtime answers.
#include "runtime_internal.h"

namespace {

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorProfilerDisabled, "cudaErrorProfilerDisabled", "profiler disabled while using external profiling tool"},
    {cudaErrorProfilerNotInitialized, "cudaErrorProfilerNotInitialized", "profiler not initialized"},
    {cudaErrorProfilerAlreadyStarted, "cudaErrorProfilerAlreadyStarted", "profiler already started"},
    {cudaErrorProfilerAlreadyStopped, "cudaErrorProfilerAlreadyStopped", "profiler already stopped"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidHostPointer, "cudaErrorInvalidHostPointer", "invalid host pointer"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidTexture, "cudaErrorInvalidTexture", "invalid texture"},
    {cudaErrorInvalidTextureBinding, "cudaErrorInvalidTextureBinding", "invalid texture binding"},
    {cudaErrorInvalidChannelDescriptor, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorAddressOfConstant, "cudaErrorAddressOfConstant", "address of constant"},
    {cudaErrorTextureFetchFailed, "cudaErrorTextureFetchFailed", "texture fetch failed"},
    {cudaErrorTextureNotBound, "cudaErrorTextureNotBound", "texture not bound"},
    {cudaErrorSynchronizationError, "cudaErrorSynchronizationError", "synchronization error"},
    {cudaErrorInvalidFilterSetting, "cudaErrorInvalidFilterSetting", "invalid filter setting"},
    {cudaErrorInvalidNormSetting, "cudaErrorInvalidNormSetting", "invalid norm setting"},
    {cudaErrorMixedDeviceExecution, "cudaErrorMixedDeviceExecution", "mixed device execution"},
    {cudaErrorNotYetImplemented, "cudaErrorNotYetImplemented", "not yet implemented"},
    {cudaErrorMemoryValueTooLarge, "cudaErrorMemoryValueTooLarge", "memory value too large"},
    {cudaErrorStubLibrary, "cudaErrorStubLibrary", "stub library"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorCallRequiresNewerDriver, "cudaErrorCallRequiresNewerDriver", "call requires newer driver"},
    {cudaErrorInvalidSurface, "cudaErrorInvalidSurface", "invalid surface"},
    {cudaErrorDuplicateVariableName, "cudaErrorDuplicateVariableName", "duplicate variable name"},
    {cudaErrorDuplicateTextureName, "cudaErrorDuplicateTextureName", "duplicate texture name"},
    {cudaErrorDuplicateSurfaceName, "cudaErrorDuplicateSurfaceName", "duplicate surface name"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {cudaErrorIncompatibleDriverContext, "cudaErrorIncompatibleDriverContext", "incompatible driver context"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorPriorLaunchFailure, "cudaErrorPriorLaunchFailure", "prior launch failure"},
    {cudaErrorLaunchMaxDepthExceeded, "cudaErrorLaunchMaxDepthExceeded", "launch max depth exceeded"},
    {cudaErrorLaunchFileScopedTex, "cudaErrorLaunchFileScopedTex", "launch file scoped tex"},
    {cudaErrorLaunchFileScopedSurf, "cudaErrorLaunchFileScopedSurf", "launch file scoped surf"},
    {cudaErrorSyncDepthExceeded, "cudaErrorSyncDepthExceeded", "sync depth exceeded"},
    {cudaErrorLaunchPendingCountExceeded, "cudaErrorLaunchPendingCountExceeded", "launch pending count exceeded"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceNotLicensed, "cudaErrorDeviceNotLicensed", "device not licensed"},
    {cudaErrorSoftwareValidityNotEstablished, "cudaErrorSoftwareValidityNotEstablished", "software validity not established"},
    {cudaErrorStartupFailure, "cudaErrorStartupFailure", "unspecified driver error"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "device uninitialized"},
    {cudaErrorMapBufferObjectFailed, "cudaErrorMapBufferObjectFailed", "map buffer object failed"},
    {cudaErrorUnmapBufferObjectFailed, "cudaErrorUnmapBufferObjectFailed", "unmap buffer object failed"},
    {cudaErrorArrayIsMapped, "cudaErrorArrayIsMapped", "array is mapped"},
    {cudaErrorAlreadyMapped, "cudaErrorAlreadyMapped", "already mapped"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"},
    {cudaErrorAlreadyAcquired, "cudaErrorAlreadyAcquired", "already acquired"},
    {cudaErrorNotMapped, "cudaErrorNotMapped", "not mapped"},
    {cudaErrorNotMappedAsArray, "cudaErrorNotMappedAsArray", "not mapped as array"},
    {cudaErrorNotMappedAsPointer, "cudaErrorNotMappedAsPointer", "not mapped as pointer"},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {cudaErrorUnsupportedLimit, "cudaErrorUnsupportedLimit", "limit is not supported on this architecture"},
    {cudaErrorDeviceAlreadyInUse, "cudaErrorDeviceAlreadyInUse", "device already in use"},
    {cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported", "peer access unsupported"},
    {cudaErrorInvalidPtx, "cudaErrorInvalidPtx", "invalid ptx"},
    {cudaErrorInvalidGraphicsContext, "cudaErrorInvalidGraphicsContext", "invalid graphics context"},
    {cudaErrorNvlinkUncorrectable, "cudaErrorNvlinkUncorrectable", "nvlink uncorrectable"},
    {cudaErrorJitCompilerNotFound, "cudaErrorJitCompilerNotFound", "jit compiler not found"},
    {cudaErrorUnsupportedPtxVersion, "cudaErrorUnsupportedPtxVersion", "unsupported ptx version"},
    {cudaErrorJitCompilationDisabled, "cudaErrorJitCompilationDisabled", "jit compilation disabled"},
    {cudaErrorUnsupportedExecAffinity, "cudaErrorUnsupportedExecAffinity", "unsupported exec affinity"},
    {cudaErrorUnsupportedDevSideSync, "cudaErrorUnsupportedDevSideSync", "unsupported dev side sync"},
    {cudaErrorContained, "cudaErrorContained", "contained"},
    {cudaErrorInvalidSource, "cudaErrorInvalidSource", "invalid source"},
    {cudaErrorFileNotFound, "cudaErrorFileNotFound", "file not found"},
    {cudaErrorSharedObjectSymbolNotFound, "cudaErrorSharedObjectSymbolNotFound", "shared object symbol not found"},
    {cudaErrorSharedObjectInitFailed, "cudaErrorSharedObjectInitFailed", "shared object init failed"},
    {cudaErrorOperatingSystem, "cudaErrorOperatingSystem", "operating system"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorLossyQuery, "cudaErrorLossyQuery", "lossy query"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorLaunchIncompatibleTexturing, "cudaErrorLaunchIncompatibleTexturing", "launch incompatible texturing"},
    {cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {cudaErrorSetOnActiveProcess, "cudaErrorSetOnActiveProcess", "cannot set while device is active in this process"},
    {cudaErrorContextIsDestroyed, "cudaErrorContextIsDestroyed", "context is destroyed"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorTooManyPeers, "cudaErrorTooManyPeers", "too many peers"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace", "invalid address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid pc"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorCooperativeLaunchTooLarge, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {cudaErrorTensorMemoryLeak, "cudaErrorTensorMemoryLeak", "tensor memory leak"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorSystemNotReady, "cudaErrorSystemNotReady", "system not ready"},
    {cudaErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch", "system driver mismatch"},
    {cudaErrorCompatNotSupportedOnDevice, "cudaErrorCompatNotSupportedOnDevice", "compat not supported on device"},
    {cudaErrorMpsConnectionFailed, "cudaErrorMpsConnectionFailed", "mps connection failed"},
    {cudaErrorMpsRpcFailure, "cudaErrorMpsRpcFailure", "mps rpc failure"},
    {cudaErrorMpsServerNotReady, "cudaErrorMpsServerNotReady", "mps server not ready"},
    {cudaErrorMpsMaxClientsReached, "cudaErrorMpsMaxClientsReached", "mps max clients reached"},
    {cudaErrorMpsMaxConnectionsReached, "cudaErrorMpsMaxConnectionsReached", "mps max connections reached"},
    {cudaErrorMpsClientTerminated, "cudaErrorMpsClientTerminated", "mps client terminated"},
    {cudaErrorCdpNotSupported, "cudaErrorCdpNotSupported", "cdp not supported"},
    {cudaErrorCdpVersionMismatch, "cudaErrorCdpVersionMismatch", "cdp version mismatch"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorTimeout, "cudaErrorTimeout", "wait operation timed out"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    {cudaErrorExternalDevice, "cudaErrorExternalDevice", "external device"},
    {cudaErrorInvalidClusterSize, "cudaErrorInvalidClusterSize", "invalid cluster size"},
    {cudaErrorFunctionNotLoaded, "cudaErrorFunctionNotLoaded", "function not loaded"},
    {cudaErrorInvalidResourceType, "cudaErrorInvalidResourceType", "invalid resource type"},
    {cudaErrorInvalidResourceConfiguration, "cudaErrorInvalidResourceConfiguration", "invalid resource configuration"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find(cudaError_t error) {
  for (const ErrorText& e : kErrors)
    if (e.code == error) return &e;
  return nullptr;
}

}  // namespace

extern "C" {

// Traced (CUPTI has callback ids for both); they never set the last error. functionReturnValue
// points to the returned const char*.
SIMCUDA_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  using namespace simcuda;
  ensure_initialized();
  cudaGetErrorName_v6050_params params{error};
  const ErrorText* e = find(error);
  const char* ret = e ? e->name : "unrecognized error code";
  ApiScope scope(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorName_v6050, "cudaGetErrorName",
                 SIM_CALL_OTHER, &params, &ret);
  scope.finish();
  return ret;
}

SIMCUDA_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  using namespace simcuda;
  ensure_initialized();
  cudaGetErrorString_v3020_params params{error};
  const ErrorText* e = find(error);
  const char* ret = e ? e->text : "unrecognized error code";
  ApiScope scope(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020, "cudaGetErrorString",
                 SIM_CALL_OTHER, &params, &ret);
  scope.finish();
  return ret;
}

}  // extern "C"
