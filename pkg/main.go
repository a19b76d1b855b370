// Command gpx_jobsight is the backend of the Jobsight Grafana datasource
// plugin. Grafana starts it and talks to it over gRPC; it is not run by hand.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/jobsight/jobsight/pkg/plugin"
)

func main() {
	if err := datasource.Manage(plugin.PluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("Serving the Jobsight datasource failed", "error", err)
		os.Exit(1)
	}
}
