// Package gpu is the agent's narrow view of a node's GPUs: the devices
// (whole GPUs, MIG instances, AMD compute partitions), what each one is
// doing now, and which processes run on it. Backends (NVML in gpu/nvidia,
// AMD SMI and the amd-smi CLI in gpu/amd, the labelled simulator in this
// package) implement Backend and return Go errors and plain Go types; the
// job collector (collector.go) attributes devices to a job and turns their
// readings into per-GPU samples.
//
// A field a backend cannot read (the driver says "not supported", the
// device is too old, the library lacks the call) is marked missing in the
// reading, never reported as zero.
package gpu

import (
	"errors"
	"strconv"
	"strings"
)

// ErrUnavailable says that a backend cannot run on this host: its library
// is absent, the agent was built without cgo, or the driver does not
// answer. Opening the GPU collector treats it as "no GPUs", not a failure.
var ErrUnavailable = errors.New("gpu backend unavailable")

// ErrNoProcessList says that a device's processes cannot be listed (the
// driver does not support it or refuses): which processes use the device is
// unknown, which is not the same as none.
var ErrNoProcessList = errors.New("the device's processes cannot be listed")

// Vendor names the maker of a device.
type Vendor string

// Vendors.
const (
	VendorNVIDIA Vendor = "nvidia"
	VendorAMD    Vendor = "amd"
)

// Device is one GPU as the job sees it: a whole GPU, a MIG instance of an
// NVIDIA GPU, or a compute partition (GCD, CPX/DPX/QPX/TPX) of an AMD GPU.
type Device struct {
	// Index is the device's position in the backend's enumeration (NVML's
	// index for NVIDIA, amd-smi's for AMD). Slurm numbers GPUs by their
	// device files instead, so Resolve maps Slurm's indices through Minor.
	// MIG instances and partitions have their own Index after the whole
	// GPUs; Parent names the GPU they belong to.
	Index int
	// Minor is the device node's minor number (/dev/nvidia<minor>,
	// /dev/dri/renderD<minor>), for matching the job cgroup's device list;
	// -1 when unknown.
	Minor int
	// UUID is the vendor's stable identifier ("GPU-…", "MIG-…"), "" when
	// unknown.
	UUID string
	// Model is the marketing name ("NVIDIA A100-SXM4-80GB", "AMD Instinct MI250X").
	Model  string
	Vendor Vendor
	// Parent is the Index of the whole GPU this MIG instance or partition
	// is part of; -1 for a whole GPU.
	Parent int
	// Partition describes a MIG profile ("1g.10gb") or an AMD compute
	// partition ("GCD", "CPX"); "" for a whole GPU.
	Partition string
	// PCIBusID is the device's PCI address, "" when unknown.
	PCIBusID string
	// MemoryTotalBytes is the device's memory; 0 when unknown.
	MemoryTotalBytes uint64
	// Simulated is true for devices of the simulated backend: every
	// document and series made from them says so.
	Simulated bool
}

// Name is the device's label value in series and documents: its index,
// written "3" for a whole GPU.
func (d Device) Name() string { return strconv.Itoa(d.Index) }

// Field names one value of a Reading. A Reading's Missing set says which
// fields could not be read.
type Field uint32

// The fields of a Reading.
const (
	FieldUtilization Field = 1 << iota // UtilizationRatio
	FieldMemoryUsed                    // MemoryUsedBytes
	FieldMemoryTotal                   // MemoryTotalBytes
	FieldPower                         // PowerWatts
	FieldEnergy                        // EnergyJoules
	FieldTemperature                   // TemperatureCelsius
	FieldSMClock                       // SMClockHz
	FieldMemClock                      // MemClockHz
	FieldPCIe                          // PCIeRxBytesPerSecond, PCIeTxBytesPerSecond
	// What the device actually did (NVIDIA GPM on Hopper and later, AMD
	// SMI's GPU metrics): fractions 0–1 of the last measurement window.
	FieldSMActivity     // SMActivity
	FieldSMOccupancy    // SMOccupancy
	FieldTensorActivity // TensorActivity
	// FieldTensorPrecision: TensorFP64Activity, TensorFP16Activity, TensorINT8Activity.
	FieldTensorPrecision
	FieldPipeActivity // FP64Activity, FP32Activity, FP16Activity
	FieldDRAMActivity // DRAMActivity
	FieldLink         // LinkRxBytesPerSecond, LinkTxBytesPerSecond (NVLink, XGMI)
	fieldEnd
)

// AllFields is every field of a Reading.
const AllFields = fieldEnd - 1

var fieldNames = [...]string{
	"gpu_utilization", "gpu_memory_used", "gpu_memory_total", "gpu_power", "gpu_energy",
	"gpu_temperature", "gpu_sm_clock", "gpu_memory_clock", "gpu_pcie",
	"gpu_sm_activity", "gpu_sm_occupancy", "gpu_tensor_activity", "gpu_tensor_precision",
	"gpu_pipe_activity", "gpu_dram_activity", "gpu_link",
}

// ActivityFields are the fields that say what the device did, beyond
// "some kernel ran" (utilisation): NVML's GPM metrics, AMD SMI's GPU
// metrics. A device that cannot give them (an NVIDIA GPU before Hopper, a
// driver without GPM) lists them as missing.
const ActivityFields = FieldSMActivity | FieldSMOccupancy | FieldTensorActivity | FieldTensorPrecision |
	FieldPipeActivity | FieldDRAMActivity | FieldLink

// Names returns the names of the fields in the set, in a fixed order, as
// written in documents' missing_metrics lists.
func (f Field) Names() []string {
	var names []string
	for i, n := range fieldNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// String joins the names with "+".
func (f Field) String() string { return strings.Join(f.Names(), "+") }

// Reading is what one device is doing now. Fields whose bit is set in
// Missing were not read and must not be used.
type Reading struct {
	// UtilizationRatio is the fraction of the last sample period in which
	// the device was busy (NVML "GPU utilization", AMD "gfx activity"), 0–1.
	UtilizationRatio float64
	MemoryUsedBytes  uint64
	MemoryTotalBytes uint64
	PowerWatts       float64
	// EnergyJoules is the device's cumulative energy counter (since driver
	// load); differences give the energy of an interval.
	EnergyJoules       float64
	TemperatureCelsius float64
	SMClockHz          float64
	MemClockHz         float64
	// PCIe throughput over the driver's last measurement window.
	PCIeRxBytesPerSecond float64
	PCIeTxBytesPerSecond float64

	// SMActivity is the fraction of the window the SMs were busy, averaged
	// over the SMs (NVML GPM "SM utilisation"): a single small kernel keeps
	// UtilizationRatio at 1 while this stays low.
	SMActivity float64
	// SMOccupancy is the resident warps against the SMs' maximum.
	SMOccupancy float64
	// TensorActivity is the fraction of time the tensor cores were busy
	// (any precision); the precision split is TensorFP64Activity (DMMA),
	// TensorFP16Activity (HMMA: FP16, BF16 and TF32 matrix math) and
	// TensorINT8Activity (IMMA).
	TensorActivity     float64
	TensorFP64Activity float64
	TensorFP16Activity float64
	TensorINT8Activity float64
	// FP64Activity, FP32Activity and FP16Activity are the non-tensor
	// floating-point pipes' use.
	FP64Activity float64
	FP32Activity float64
	FP16Activity float64
	// DRAMActivity is the device memory bandwidth used against its
	// maximum (NVIDIA), or the memory controller's activity (AMD UMC).
	DRAMActivity float64
	// LinkRxBytesPerSecond and LinkTxBytesPerSecond are the GPU-to-GPU
	// links' throughput (NVLink, AMD XGMI), all links together.
	LinkRxBytesPerSecond float64
	LinkTxBytesPerSecond float64

	Missing Field
}

// Reset marks every field missing.
func (r *Reading) Reset() { *r = Reading{Missing: AllFields} }

// Has reports whether every field in f was read.
func (r *Reading) Has(f Field) bool { return r.Missing&f == 0 }

// Set clears f's bit in Missing: call it after storing the field's value.
func (r *Reading) Set(f Field) { r.Missing &^= f }

// CopyFields copies the values of the fields in f from src into r and marks
// them read.
func (r *Reading) CopyFields(src *Reading, f Field) {
	if f&FieldUtilization != 0 {
		r.UtilizationRatio = src.UtilizationRatio
	}
	if f&FieldMemoryUsed != 0 {
		r.MemoryUsedBytes = src.MemoryUsedBytes
	}
	if f&FieldMemoryTotal != 0 {
		r.MemoryTotalBytes = src.MemoryTotalBytes
	}
	if f&FieldPower != 0 {
		r.PowerWatts = src.PowerWatts
	}
	if f&FieldEnergy != 0 {
		r.EnergyJoules = src.EnergyJoules
	}
	if f&FieldTemperature != 0 {
		r.TemperatureCelsius = src.TemperatureCelsius
	}
	if f&FieldSMClock != 0 {
		r.SMClockHz = src.SMClockHz
	}
	if f&FieldMemClock != 0 {
		r.MemClockHz = src.MemClockHz
	}
	if f&FieldPCIe != 0 {
		r.PCIeRxBytesPerSecond, r.PCIeTxBytesPerSecond = src.PCIeRxBytesPerSecond, src.PCIeTxBytesPerSecond
	}
	if f&FieldSMActivity != 0 {
		r.SMActivity = src.SMActivity
	}
	if f&FieldSMOccupancy != 0 {
		r.SMOccupancy = src.SMOccupancy
	}
	if f&FieldTensorActivity != 0 {
		r.TensorActivity = src.TensorActivity
	}
	if f&FieldTensorPrecision != 0 {
		r.TensorFP64Activity, r.TensorFP16Activity, r.TensorINT8Activity = src.TensorFP64Activity, src.TensorFP16Activity, src.TensorINT8Activity
	}
	if f&FieldPipeActivity != 0 {
		r.FP64Activity, r.FP32Activity, r.FP16Activity = src.FP64Activity, src.FP32Activity, src.FP16Activity
	}
	if f&FieldDRAMActivity != 0 {
		r.DRAMActivity = src.DRAMActivity
	}
	if f&FieldLink != 0 {
		r.LinkRxBytesPerSecond, r.LinkTxBytesPerSecond = src.LinkRxBytesPerSecond, src.LinkTxBytesPerSecond
	}
	r.Set(f)
}

// Drop marks the fields in f missing and zeroes their values.
func (r *Reading) Drop(f Field) {
	r.CopyFields(&Reading{}, f)
	r.Missing |= f
}

// Process is a process using a device.
type Process struct {
	PID uint32
	// MemoryBytes is the device memory the process holds; 0 when the
	// driver does not say (MemoryKnown false).
	MemoryBytes uint64
	MemoryKnown bool
}

// Backend reads the devices of one node. Implementations are not safe for
// concurrent use; the agent calls them from its sampling goroutine.
type Backend interface {
	// Name says which backend this is ("nvml", "amdsmi", "amd-smi-cli",
	// "simulated"); it is written into documents as the GPU data's source.
	Name() string
	// Devices lists the devices, enumerated once when the backend opened.
	Devices() []Device
	// Read fills in r for the device with the given Index (r is Reset by
	// the caller). A field the device does not support stays missing and
	// is not an error; an error means the device could not be read at all.
	Read(index int, r *Reading) error
	// Processes appends the processes running on the device to buf and
	// returns it; an error wrapping ErrNoProcessList when the device's
	// processes cannot be listed.
	Processes(index int, buf []Process) ([]Process, error)
	// Close releases the library (NVML Shutdown, amdsmi_shut_down).
	Close() error
}
