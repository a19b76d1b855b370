// Command gpx_jobsight is the backend of the Jobsight Grafana datasource
// plugin. Grafana starts it and talks to it over gRPC; it is not run by hand.
package main

import (
	"os"
	"runtime/debug"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/jobsight/jobsight/pkg/plugin"
)

// memoryLimit is the Go runtime's soft memory limit for the plugin
// process when GOMEMLIMIT does not set one: near it the garbage collector
// runs sooner, so that a large answer (a 10,000-row Jobs page decodes
// ~80 MB) does not leave the process holding twice its live heap. It is
// soft: a query that needs more still gets it.
const memoryLimit = 150 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if err := datasource.Manage(plugin.PluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("Serving the Jobsight datasource failed", "error", err)
		os.Exit(1)
	}
}
