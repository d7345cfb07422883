// State private to libcuda.so.1 that its own files share (not exported to the other sim libs).
#pragma once

#include "sim_driver.h"

namespace simcuda {

const CuptiSink* cupti_sink();  // the installed sink, or nullptr
uint32_t context_uid(CUcontext ctx);

// ---- contexts (driver_init.cpp, driver_context.cpp) ----------------------------------------------
bool driver_initialized();               // cuInit (or the runtime's first call) has run
bool primary_context_exists(int device); // retained or used, and not reset since
int context_device(CUcontext ctx);       // -1 for an unknown handle
bool is_context(CUcontext ctx);          // a live context this driver made
bool is_primary_context(CUcontext ctx);
bool context_live(CUcontext ctx);        // lock-free: for a handle this driver handed out
CUcontext create_context(int device, unsigned flags);  // cuCtxCreate: a new, non-primary context
void destroy_context(CUcontext ctx);     // fires CONTEXT_DESTROY_STARTING, forgets the handle
unsigned context_flags(CUcontext ctx);
void set_context_flags(CUcontext ctx, unsigned flags);
// The calling thread's current context: the one cuCtxSetCurrent/cuCtxPushCurrent made current;
// else, for threads that never set one, the primary context of the thread's device once it
// exists (the runtime makes it current implicitly); else nullptr.
CUcontext current_context();
// Fires the resource-domain callback for a context.
void fire_context_resource(CUpti_CallbackId cbid, CUcontext ctx);

}  // namespace simcuda
