package main

import (
	"fmt"
	"log/slog"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/agent/emissions"
	"github.com/jobsight/jobsight/agent/energy"
	shared "github.com/jobsight/jobsight/internal/config"
)

// openEnergy opens the node's energy sources (nil when energy.enabled is
// off) and logs once what the node does not offer.
func openEnergy(cfg config.Config, log *slog.Logger) *energy.Meter {
	if !cfg.Energy.Enabled {
		return nil
	}
	var power *energy.PowerMeter
	if cfg.Energy.IPMITool != "" {
		power = energy.NewPowerMeter(energy.IPMITool(cfg.Energy.IPMITool), energy.PowerOptions{
			Interval: cfg.Energy.IPMIInterval, Timeout: cfg.Energy.IPMITimeout, Log: log.With("component", "energy")})
	}
	m := energy.Open(energy.Options{SysfsRoot: cfg.Energy.SysfsRoot, ProcRoot: cfg.ProcRoot, Power: power, Log: log})
	for _, why := range m.RAPL.Unavailable() {
		log.Info("energy: not measured on this node", "why", why)
	}
	return m
}

// emissionsEstimator builds the emission factor source (nil without
// emissions.zone).
func emissionsEstimator(cfg config.Config) (*emissions.Estimator, error) {
	c := cfg.Emissions
	if c.Zone == "" {
		return nil, nil
	}
	static, ok := emissions.StaticFactor(c.Zone)
	if c.FactorGPerKWh > 0 {
		static = emissions.Factor{GramsPerKWh: c.FactorGPerKWh, Zone: c.Zone, Source: c.FactorSource, Provider: emissions.ProviderStatic}
	} else if !ok {
		return nil, fmt.Errorf("emissions.zone %q has no factor", c.Zone) // Validate prevents this
	}
	e := &emissions.Estimator{Static: static, Zone: c.Zone, Timeout: c.Live.Timeout}
	if c.Live.Provider == "electricitymaps" {
		token, err := shared.ReadSecret("emissions.live.token_file", c.Live.TokenFile)
		if err != nil {
			return nil, err
		}
		e.Live = &emissions.ElectricityMaps{URL: c.Live.URL, Token: token}
	}
	return e, nil
}
