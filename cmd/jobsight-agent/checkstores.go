package main

import (
	"context"
	"io"
	"os/signal"
	"syscall"

	"github.com/jobsight/jobsight/agent/config"
	"github.com/jobsight/jobsight/internal/storecheck"
)

// checkStores is `jobsight-agent check-stores`: each call the agent makes
// to its stores, with its credentials and trust, one line each
// (internal/storecheck). It exits 1 when any call failed.
func checkStores(cfg config.Config, stdout io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r := storecheck.Agent(ctx, cfg.Elasticsearch, cfg.Prometheus.RemoteWrite, cfg.Cluster, storecheck.Options{Host: cfg.Node})
	r.Write(stdout)
	if r.Problems() > 0 {
		return 1
	}
	return 0
}
