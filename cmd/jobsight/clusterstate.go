package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/site/clusterstate"
	"github.com/jobsight/jobsight/internal/storecheck"
)

// clusterStateCmd runs the cluster-state collector (docs/cluster-state.md):
//
//	jobsight cluster-state [--config FILE] [--once] [--check] [--check-stores] [-v]
//
// It has its own configuration file (default
// /etc/jobsight/cluster-state.yaml), not the site's.
func clusterStateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jobsight cluster-state", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", clusterstate.DefaultConfigPath, "collector configuration file")
	once := fs.Bool("once", false, "poll once, print a summary and exit")
	check := fs.Bool("check", false, "validate the configuration and the constants file, then exit")
	checkStores := fs.Bool("check-stores", false, "make each store call the collector makes, one line each, then exit (1: something is missing)")
	verbose := fs.Bool("v", false, "log debug messages")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if privileged() {
		fmt.Fprintln(stderr, "jobsight: cluster-state: not through the setgid installation; run it as the collector's own user")
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("cmd", "cluster-state")
	cfg, err := clusterstate.LoadConfig(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 2
	}
	constants, err := clusterstate.OpenConstants(cfg.ConstantsFile, log)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 2
	}
	// The token is read (and its file's mode checked) at start: --check
	// says what a start would.
	token, err := config.ReadSecret("listen_token_file", cfg.ListenTokenFile)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 2
	}
	if cfg.ListenTokenFile != "" && token == "" {
		fmt.Fprintf(stderr, "jobsight: listen_token_file: %s is empty\n", cfg.ListenTokenFile)
		return 2
	}
	var tlsCfg *tls.Config
	if cfg.ListenTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ListenTLSCert, cfg.ListenTLSKey)
		if err != nil {
			fmt.Fprintln(stderr, "jobsight: listen_tls_cert/listen_tls_key:", err)
			return 2
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *check {
		fmt.Fprintf(stdout, "config %s: ok\n", *cfgPath)
		return 0
	}
	if *checkStores {
		return reportStores(checkCollectorStores(context.Background(), cfg, storecheck.Options{}), stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reg := prometheus.NewRegistry()
	c, err := clusterstate.New(cfg, clusterstate.Options{Registerer: reg, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 1
	}
	if *once {
		snap, err := c.Poll(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "jobsight:", err)
			return 1
		}
		fmt.Fprintf(stdout, "cluster %s: %d nodes, %d partitions, %d running and %d pending jobs\n",
			snap.Cluster, len(snap.Nodes), len(snap.Partitions), snap.RunningJobs, snap.PendingJobs)
		if u := snap.Unreported; u != nil {
			// The nodes running jobs that no agent reports on (a stale
			// SPANK plugin, ...): docs/cluster-state.md.
			var byNode []string
			for _, n := range u.Nodes[:min(len(u.Nodes), 20)] {
				byNode = append(byNode, fmt.Sprintf("%s %d", n.Node, n.Jobs))
			}
			if len(u.Nodes) > 20 {
				byNode = append(byNode, fmt.Sprintf("and %d more nodes", len(u.Nodes)-20))
			}
			fmt.Fprintf(stdout, "%d running jobs without an agent report", u.Jobs)
			if len(byNode) > 0 {
				fmt.Fprintf(stdout, " (by node: %s)", strings.Join(byNode, ", "))
			}
			fmt.Fprintln(stdout)
		}
		return 0
	}
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			fmt.Fprintln(stderr, "jobsight: listen:", err)
			return 1
		}
		srv := &http.Server{Handler: c.Handler(constants, reg, token), ReadHeaderTimeout: 10 * time.Second}
		scheme := "http"
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
			scheme = "https"
		}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("listener", "err", err)
			}
		}()
		defer srv.Close()
		log.Info("serving /constants, /metrics and /healthz", "addr", ln.Addr().String(), "scheme", scheme, "bearer_token", token != "")
	}
	log.Info("polling", "interval", cfg.Interval)
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "jobsight:", err)
		return 1
	}
	return 0
}
