# SPDX-License-Identifier: MIT
"""The guide's python/02_lsa_put: an intra-node LSA put by a hand-written GPU kernel
(02_lsa_put.cu, against the guide's C++ header cco/cco.hpp), compiled and launched from Python.

    python -m cco.launch -n 2 examples/python/02_lsa_put.py      (or torchrun / mpirun)

The kernel is compiled once per GPU architecture into a cubin (nvcc; hipcc --genco on ROCm)
in CCO's cache, and launched through the driver API with ctypes: the device communicator by
address (DevCommHandle.ptr), the window by handle. Ranks beyond the GPUs share them (run them
under MPS). Status: runs on an H200 (tests/gpu/run_all.sh examples).
"""

import ctypes
import hashlib
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "02_lsa_put.cu")
WORDS = 1 << 16


def include_dirs():
    """The guide's headers: the installed wheel's include folder, else a checkout's."""
    import cco

    package = os.path.dirname(cco.__file__)
    wheel = os.path.join(package, "_data", "include")
    if os.path.isdir(wheel):
        return [wheel]
    repo = os.path.abspath(os.path.join(package, "..", "..", ".."))
    return [repo, os.path.join(repo, "host", "include")]


def compile_kernel(hip, arch):
    """The kernel's code object for `arch`, built once into ~/.cache/cco/examples, keyed by the
    kernel, the headers it includes and the ABI version (a changed ccoDevComm means a rebuild)."""
    from cco.device import ABI_VERSION

    digest = hashlib.sha256(f"{arch} {ABI_VERSION}".encode())
    headers = sorted(os.path.join(root, name) for d in include_dirs() for sub in ("cco", "device", "abi")
                     for root, _, files in os.walk(os.path.join(d, sub)) for name in files)
    for path in [KERNEL] + headers:
        with open(path, "rb") as f:
            digest.update(f.read())
    key = digest.hexdigest()[:16]
    folder = os.path.join(os.path.expanduser("~"), ".cache", "cco", "examples")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, f"02_lsa_put-{arch}-{key}.{'hsaco' if hip else 'cubin'}")
    if not os.path.exists(out):
        flags = [f"-I{d}" for d in include_dirs()]
        command = (["hipcc", "--genco", f"--offload-arch={arch}"] if hip else ["nvcc", "-cubin", f"-arch={arch}"])
        partial = f"{out}.{os.getpid()}"
        subprocess.run(command + ["-std=c++17", "-O2", *flags, KERNEL, "-o", partial], check=True)
        os.replace(partial, out)  # ranks compiling at once: the last one in place wins, all equal
    return out


class Driver:
    """cuModuleLoad / cuModuleGetFunction / cuLaunchKernel (or HIP's), checked."""

    def __init__(self, hip):
        self.lib = ctypes.CDLL("libamdhip64.so" if hip else "libcuda.so.1")
        self.prefix = "hip" if hip else "cu"

    def call(self, name, *args):
        result = getattr(self.lib, self.prefix + name)(*args)
        if result != 0:
            raise RuntimeError(f"{self.prefix}{name} failed with {result}")

    def kernel(self, path, name):
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self.call("ModuleLoad", ctypes.byref(module), path.encode())
        self.call("ModuleGetFunction", ctypes.byref(function), module, name.encode())
        return function

    def launch(self, function, threads, stream, *args):
        """One block of `threads` on `stream`; `args` are ctypes values of the kernel's types."""
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        self.call("ModuleLaunchKernel" if self.prefix == "hip" else "LaunchKernel", function, 1, 1, 1, threads, 1, 1,
                  0, ctypes.c_void_p(stream), params, None)


def main():
    from cco import GDA_CONNECTION_NONE, CCODevCommRequirements, Communicator
    from cco.runtime import bootstrap, gpu_torch

    torch = gpu_torch("examples/python/02_lsa_put.py")

    rank, world, uid = bootstrap()
    hip = torch.version.hip is not None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    arch = props.gcnArchName.split(":")[0] if hip else f"sm_{props.major}{props.minor}"
    driver = Driver(hip)
    torch.cuda.init()
    lsa_put = driver.kernel(compile_kernel(hip, arch), "lsa_put")

    with Communicator.init(world, rank, uid, per_rank_vmm=256 << 20) as comm:
        win = comm.alloc_window(WORDS * 4)
        dc = comm.create_dev_comm(CCODevCommRequirements(gda_connection_type=GDA_CONNECTION_NONE,
                                                         lsa_barrier_count=1))
        stream = torch.cuda.Stream()  # a stream of our own, waited on alone
        with torch.cuda.stream(stream):
            errors = torch.zeros(1, dtype=torch.int32, device="cuda")  # zeroed on that stream, before the kernel
            driver.launch(lsa_put, 256, stream.cuda_stream, ctypes.c_uint64(dc.ptr), ctypes.c_uint64(win.handle),
                          ctypes.c_int(WORDS), ctypes.c_uint64(errors.data_ptr()))
        stream.synchronize()
        bad = int(errors.item())
        print(f"rank {rank}/{world}: hand-written LSA put kernel: {'OK' if bad == 0 else 'WRONG'} ({bad} errors)",
              flush=True)
        comm.barrier()
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    from cco.runtime import run_script

    raise SystemExit(run_script(main))
