// Package amd reads AMD Instinct GPUs for the agent's GPU collector. It has
// two gpu.Backend implementations:
//
//   - LibBackend ("amdsmi") binds the AMD SMI C library (libamd_smi.so) at
//     run time with dlopen, so the agent builds and runs on hosts without
//     ROCm; it needs cgo.
//   - CLIBackend ("amd-smi-cli") runs the amd-smi tool with --json and
//     parses its output; it is pure Go.
//
// OpenSystem tries the library, then the tool, and otherwise returns an
// error wrapping gpu.ErrUnavailable.
//
// Both backends model each device the driver enumerates (a whole GPU, an
// MI250X GCD, an MI300 compute partition) as its own gpu.Device with Parent
// -1, and apply the same consistency checks (consistency.go) before a
// reading leaves the package: power and energy shared by the devices of one
// package or physical GPU are attributed once, impossible values (0 W, VRAM
// used above total, utilisation outside 0–100 %, an energy counter going
// backwards) are marked missing, never reported as zero. README.md in this
// directory describes what is read from which call or JSON key.
package amd
