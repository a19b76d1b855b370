package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/agent/config"
)

// A cluster name from SLURM_CLUSTER_NAME goes into document ids and the CPU
// profile's file name: one the config would refuse is an error naming it
// (a "../" in it wrote the profile outside cpu_profile_dir).
func TestClusterNameFromEnvironmentIsChecked(t *testing.T) {
	var cfg config.Config
	cfg.Slurm.Scontrol = filepath.Join(t.TempDir(), "no-scontrol") // never reached, or fails
	t.Setenv("SLURM_CLUSTER_NAME", "../../etc/cron.d/x")
	if c, err := clusterName(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `SLURM_CLUSTER_NAME "../../etc/cron.d/x"`) {
		t.Errorf("clusterName = %q, %v; want an error naming SLURM_CLUSTER_NAME's value", c, err)
	}
	t.Setenv("SLURM_CLUSTER_NAME", "hpc-1.east")
	if c, err := clusterName(context.Background(), cfg); err != nil || c != "hpc-1.east" {
		t.Errorf("clusterName = %q, %v; want hpc-1.east", c, err)
	}
	t.Setenv("SLURM_CLUSTER_NAME", "")
	if c, err := clusterName(context.Background(), cfg); err != nil || c != "" {
		t.Errorf("without SLURM_CLUSTER_NAME nor scontrol: %q, %v; want none", c, err)
	}
}
