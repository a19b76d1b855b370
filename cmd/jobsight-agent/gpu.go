package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/gpu"
	"github.com/jobsight/jobsight/agent/gpu/amd"
	"github.com/jobsight/jobsight/agent/gpu/nvidia"
)

// openGPU opens the configured GPU backend. It returns nil and the reason
// when the node has no GPU the agent can read; "auto" finding none is not
// worth a warning (most nodes have no GPU), a named backend failing is.
func openGPU(ctx context.Context, cfg config.GPUConfig, log *slog.Logger) (gpu.Backend, string) {
	switch cfg.Backend {
	case "none":
		return nil, "gpu.backend is none"
	case "simulated":
		profiles := map[int]gpu.Profile{}
		for i, p := range cfg.Simulated.DeviceProfiles {
			profiles[i] = gpu.Profile(p)
		}
		// #nosec G115 -- config validation requires memory_bytes >= 1 MiB: never negative.
		b, err := gpu.NewSimulated(gpu.SimConfig{Devices: cfg.Simulated.Devices, MemoryBytes: uint64(cfg.Simulated.MemoryBytes),
			Profile: gpu.Profile(cfg.Simulated.Profile), DeviceProfiles: profiles, DropAfter: cfg.Simulated.DropAfter})
		if err != nil {
			log.Error("simulated GPUs", "err", err)
			return nil, err.Error()
		}
		log.Warn("GPU data is SIMULATED (gpu.backend: simulated): not a measurement of real hardware", "devices", len(b.Devices()))
		return b, ""
	}
	var errs []error
	if cfg.Backend == "auto" || cfg.Backend == "nvidia" {
		b, err := nvidia.OpenSystem()
		if err == nil {
			for _, p := range b.EnumerationErrors() {
				log.Warn("NVIDIA GPU left out", "err", p)
			}
			if !cfg.PCIe {
				b.Skip(gpu.FieldPCIe)
			}
			b.SetActivityInterval(cfg.ActivityInterval)
			return b, ""
		}
		errs = append(errs, err)
	}
	if cfg.Backend == "auto" || cfg.Backend == "amd" {
		var b gpu.Backend
		var err error
		if cfg.AMDLibrary != "" {
			b, err = amd.OpenLibrary(cfg.AMDLibrary)
		} else {
			b, err = amd.OpenSystem(ctx)
		}
		if err == nil {
			return b, ""
		}
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if cfg.Backend != "auto" || !errors.Is(err, gpu.ErrUnavailable) {
		log.Warn("no GPU backend", "backend", cfg.Backend, "err", err)
	} else {
		log.Debug("no GPU backend", "err", err)
	}
	return nil, err.Error()
}
