//go:build mage

// Magefile builds the plugin backend with the Grafana plugin SDK's build
// targets. Run it without installing mage:
//
//	go run github.com/magefile/mage -v            # dist/gpx_jobsight_linux_amd64
//	go run github.com/magefile/mage -l            # list every target
//	go run github.com/magefile/mage -v buildAll   # all platforms
//
// plugin.json lives at the top of the repository (the SDK expects it in
// src/): the callback below points the SDK there, so the executable name
// ("executable" in plugin.json) and the plugin id come from the one file.
// The frontend (npm run build) writes into the same dist/ without emptying it.

// Builds the Jobsight plugin backend (gpx_jobsight) with the Grafana plugin SDK.
package main

import (
	"github.com/magefile/mage/mg"

	//mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

func init() {
	// Where plugin.json is, relative to the repository root.
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	})
}

// Default builds the backend for linux/amd64 into dist/.
var Default = LinuxAMD64

// LinuxAMD64 builds dist/gpx_jobsight_linux_amd64, the executable Grafana
// runs on Linux x86-64.
func LinuxAMD64() error {
	mg.Deps(build.Build.Linux)
	return nil
}
