"""A Python job on the simulated CUDA runtime, through ctypes, whose blocking calls are made at
lines the test knows (each marked by a comment naming the call): python_stacks_test.py checks that
every one is recorded with its Python stack, innermost frame first, at that line.

Usage: python_stacks_prog.py SIMLIB_DIR [--threads] [--fork] [--child-exit os|sys]
  --threads     a second thread makes its own blocking calls
  --fork        a worker forked before CUDA is first used makes blocking calls of its own
  --child-exit  how the forked worker leaves: os._exit(0) (the default, as multiprocessing's and
                DataLoader's workers do) or sys.exit(0) (exit handlers run: what a recording made
                under CUDA_INJECTION64_PATH alone needs to be finished, no _exit hook there)
"""
import ctypes
import os
import sys
import threading

# How many times each marked call is made (python_stacks_test.py imports these): TRAIN_STEPS
# train steps, alternately reading the loss (even steps) and waiting for the step (odd steps);
# WORKER_STEPS stream syncs on the second thread; CHILD_STEPS device syncs in the forked worker.
TRAIN_STEPS = 6
WORKER_STEPS = 5
CHILD_STEPS = 3


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class Runtime:
    """The few runtime calls the job makes, as a PyTorch job makes them from C++."""

    def __init__(self, simlib):
        self.rt = ctypes.CDLL(os.path.join(simlib, "libcudart.so.13"))
        rt = self.rt
        # getattr: a name with two leading underscores written in a class would be mangled.
        register_fatbin = getattr(rt, "__cudaRegisterFatBinary")
        register_fatbin.restype = ctypes.c_void_p
        register_fatbin.argtypes = [ctypes.c_void_p]
        register_function = getattr(rt, "__cudaRegisterFunction")
        register_function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_int] + [ctypes.c_void_p] * 5
        rt.simcuda_kernel_duration_from_argument.argtypes = [ctypes.c_char_p]
        rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        self.fatbin = ctypes.create_string_buffer(16)
        self.stub = ctypes.create_string_buffer(1)
        handle = register_fatbin(ctypes.addressof(self.fatbin))
        name = b"_Z4stepv"
        rt.simcuda_kernel_duration_from_argument(name)
        register_function(handle, ctypes.addressof(self.stub), name, name, -1, None, None, None, None, None)
        self.device_buffer = ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(self.device_buffer), 4)  # at start-up: not one of the marked calls

    def launch(self, duration_ns):
        duration = ctypes.c_int64(duration_ns)
        args = (ctypes.c_void_p * 1)(ctypes.addressof(duration))
        self.rt.cudaLaunchKernel(ctypes.addressof(self.stub), Dim3(1, 1, 1), Dim3(32, 1, 1), args, 0, None)


def wait_for_step(runtime):
    runtime.rt.cudaDeviceSynchronize()  # MARK cudaDeviceSynchronize wait_for_step


def read_loss(runtime):
    loss = ctypes.c_float()
    runtime.rt.cudaMemcpy(ctypes.byref(loss), runtime.device_buffer, 4, 2)  # MARK cudaMemcpy read_loss
    return loss.value


def train_step(runtime, i):
    runtime.launch(2000000)
    if i % 2:
        wait_for_step(runtime)
    else:
        read_loss(runtime)


def worker_thread(runtime, steps):
    for _ in range(steps):
        runtime.launch(1000000)
        runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize worker_thread


def main():
    simlib = sys.argv[1]
    child = 0
    child_exit = sys.argv[sys.argv.index("--child-exit") + 1] if "--child-exit" in sys.argv else "os"
    if "--fork" in sys.argv:
        child = os.fork()
        if child == 0:
            runtime = Runtime(simlib)
            for _ in range(CHILD_STEPS):
                runtime.launch(1000000)
                runtime.rt.cudaDeviceSynchronize()  # MARK cudaDeviceSynchronize main
            if child_exit == "sys":
                sys.exit(0)
            os._exit(0)
    runtime = Runtime(simlib)
    thread = None
    if "--threads" in sys.argv:
        thread = threading.Thread(target=worker_thread, args=(runtime, WORKER_STEPS), name="worker")
        thread.start()
    for i in range(TRAIN_STEPS):
        train_step(runtime, i)
    if thread:
        thread.join()
    if child:
        _, status = os.waitpid(child, 0)
        if status != 0:
            sys.exit("the forked worker failed: status %d" % status)


if __name__ == "__main__":
    main()
