// Package nvidia is the agent's NVIDIA GPU backend: a gpu.Backend over NVML
// (libnvidia-ml.so, through github.com/NVIDIA/go-nvml).
//
// Open takes an nvml.Interface, so tests hand it go-nvml's mocks; OpenSystem
// opens the host's library. NVML is loaded with dlopen when the backend
// opens: on a host without the library or without the driver, opening fails
// with an error wrapping gpu.ErrUnavailable, which the agent takes as "no
// NVIDIA GPUs here".
//
// go-nvml needs cgo. In a build without cgo the package still compiles, but
// OpenSystem always fails with gpu.ErrUnavailable ("built without cgo") and
// Open, which takes an nvml.Interface, does not exist.
//
// # Devices
//
// Devices are enumerated once, when the backend opens. Whole GPUs keep
// NVML's index (Index 0 … N-1, which with CUDA_DEVICE_ORDER=PCI_BUS_ID is
// also CUDA's and Slurm's). When MIG mode is enabled on a GPU, each of its
// MIG devices becomes a gpu.Device of its own, with an Index after all the
// whole GPUs (N, N+1, …), Parent set to the GPU's Index, Partition set to
// the MIG profile ("3g.20gb", taken from the MIG device's name), its own
// "MIG-…" UUID and its own memory. Its Minor is -1: a MIG device has no
// /dev/nvidia<minor> node of its own (the job's cgroup allows the parent's
// node), so MIG devices are matched by UUID. The MIG-enabled GPU itself
// stays listed, as a whole GPU, so that node totals still add up.
//
// A GPU that cannot be enumerated (lost, or no permission) is left out
// and the error is kept for EnumerationErrors; the other GPUs keep their
// NVML index.
//
// # Readings
//
// A field the device does not support (NVML_ERROR_NOT_SUPPORTED, or the
// library lacks the call) or that NVML will not give now (NOT_FOUND,
// NO_PERMISSION, NO_DATA) stays missing in the reading; it is never zero
// and never an error. A field that is NOT_SUPPORTED is not asked for again
// on later reads of that device, which saves NVML calls on MIG devices and
// old GPUs. Any other NVML error (GPU_IS_LOST, UNKNOWN, …) means the device
// could not be read: Read returns it, naming the device, and wraps the
// nvml.Return so errors.Is(err, nvml.ERROR_GPU_IS_LOST) works.
//
// On most drivers MIG devices, and GPUs with MIG enabled, do not report
// utilisation (NOT_SUPPORTED): their readings lack gpu_utilization.
//
// See README.md for which NVML call gives each field and its units.
package nvidia

// backendName is what Backend.Name returns, in both builds.
const backendName = "nvml"
