package main

import (
	"fmt"
	"io"

	"github.com/jobsight/jobsight/internal/slurm"
)

// spankRelease prints the Slurm release a SPANK plugin was built for
// (MAJOR.MINOR, from its plugin_version symbol, which slurmd compares
// with its own when it loads the plugin): jobsight-spank-install --ensure
// reads it this way from a plugin that predates the release string it
// now carries.
func spankRelease(path string, stdout, stderr io.Writer) int {
	v, err := slurm.PluginVersion(path)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight-agent spank-release:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d.%02d\n", v>>16&0xff, v>>8&0xff)
	return 0
}
