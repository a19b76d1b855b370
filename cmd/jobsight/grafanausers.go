package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jobsight/jobsight/internal/config"
	"github.com/jobsight/jobsight/internal/site/grafanausers"
)

// exitReview is grafana-users' status when the map is printed but some
// users were left out or need a look (unmatched, ambiguous, changed,
// dropped).
const exitReview = 3

// grafanaUsersCmd builds the datasource's userIdMap for built-in Grafana
// accounts (docs/datasource.md, "Building userIdMap for built-in accounts"):
//
//	jobsight grafana-users --grafana-url URL --token-file FILE
//	    [--slurm-users FILE|-] [--min-uid 1000] [--email-domain D,...]
//	    [--include builtin[,LABEL...]|all] [--current FILE] [--ca-file FILE]
//	    [--full-access-roles Admin,Editor] [--per-page 500]
//
// The map goes to stdout ({"userIdMap": {...}}); what was left out, and
// why, to stderr. The token is read from --token-file only (never an
// argument: it would show in ps and shell history) and never printed.
func grafanaUsersCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jobsight grafana-users", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grafanaURL := fs.String("grafana-url", "", "Grafana's root URL (https://grafana.example.org)")
	tokenFile := fs.String("token-file", "", "file holding a service-account token of the datasource's organization (org role Admin; mode 0600)")
	usersFile := fs.String("slurm-users", "", "the site's users: passwd lines (getent passwd) or one name a line (sacctmgr -nP show users format=user); - for stdin; default: getent passwd")
	minUID := fs.Int64("min-uid", 1000, "passwd lines with a lower uid are no Slurm users (system accounts)")
	domains := fs.String("email-domain", "", "comma-separated mail domains whose addresses' local part is a Slurm user name (default: emails not used)")
	include := fs.String("include", "builtin", "accounts to map: builtin and/or Grafana's auth labels (\"Auth Proxy\", LDAP, ...), comma-separated, or all")
	current := fs.String("current", "", "the userIdMap in use (this command's earlier output, or the datasource's jsonData): its entries are kept")
	caFile := fs.String("ca-file", "", "CA bundle trusted for Grafana's certificate, in addition to the system's")
	fullAccess := fs.String("full-access-roles", "Admin,Editor", "the datasource's fullAccessRoles: unmatched users with these roles need no entry")
	perPage := fs.Int("per-page", 500, "users asked for per page")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if privileged() {
		fmt.Fprintln(stderr, "jobsight: grafana-users: not through the setgid installation; an admin runs it with their own access")
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jobsight grafana-users: unexpected argument %q (the token is read from --token-file only)\n", fs.Arg(0))
		return 2
	}
	if *grafanaURL == "" || *tokenFile == "" {
		fmt.Fprintln(stderr, "jobsight grafana-users: give --grafana-url and --token-file")
		return 2
	}
	token, err := config.ReadSecret("--token-file", *tokenFile)
	if err == nil && strings.TrimSpace(token) == "" {
		err = fmt.Errorf("--token-file: %s is empty", *tokenFile)
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobsight grafana-users:", err)
		return 2
	}
	var cur map[string]string
	if *current != "" {
		data, err := os.ReadFile(*current)
		if err == nil {
			cur, err = grafanausers.ReadCurrent(data)
		}
		if err != nil {
			fmt.Fprintf(stderr, "jobsight grafana-users: --current %s: %v\n", *current, err)
			return 2
		}
	}
	pool, err := config.TrustFile("--ca-file", *caFile)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight grafana-users:", err)
		return 2
	}
	slurm, ignored, err := readSlurmUsers(*usersFile, *minUID)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight grafana-users:", err)
		return 2
	}
	if slurm.Names() == 0 {
		fmt.Fprintln(stderr, "jobsight grafana-users: no Slurm users read (check --slurm-users and --min-uid)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &grafanausers.Client{BaseURL: *grafanaURL, Token: token, PerPage: *perPage,
		HTTP: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}}}
	users, err := client.Users(ctx)
	if errors.Is(err, grafanausers.ErrUnauthorized) {
		err = fmt.Errorf("%w: the token in %s; make a new one (Administration → Users and access → Service accounts) and write it there", err, *tokenFile)
	}
	if err != nil {
		fmt.Fprintln(stderr, "jobsight grafana-users:", err)
		return 1
	}
	res := grafanausers.Build(users, slurm, grafanausers.Options{
		EmailDomains: splitList(*domains), Include: splitList(*include), Current: cur,
		FullAccessRoles: splitList(*fullAccess)})
	if err := grafanausers.WriteMap(stdout, res.Map); err != nil {
		fmt.Fprintln(stderr, "jobsight grafana-users:", err)
		return 1
	}
	fmt.Fprintf(stderr, "%d users in the organization, %d selected (%s), %d Slurm users read", len(users), res.Selected, *include, slurm.Names())
	if ignored > 0 {
		fmt.Fprintf(stderr, " (%d lines ignored: not a user name)", ignored)
	}
	fmt.Fprintln(stderr)
	if len(res.Skipped) > 0 {
		labels := make([]string, 0, len(res.Skipped))
		for l, n := range res.Skipped {
			labels = append(labels, fmt.Sprintf("%s %d", l, n))
		}
		sort.Strings(labels)
		fmt.Fprintf(stderr, "not selected (see --include): %s\n", strings.Join(labels, ", "))
	}
	fmt.Fprintf(stderr, "map: %d entries (%d new, %d kept from --current); %d to review\n", len(res.Map), res.Added, res.Kept, res.NeedsReview())
	for _, p := range res.Problems {
		fmt.Fprintln(stderr, "  "+p.String())
	}
	if res.NeedsReview() > 0 {
		return exitReview
	}
	return 0
}

// readSlurmUsers reads path (- for stdin), or runs getent passwd.
func readSlurmUsers(path string, minUID int64) (*grafanausers.SlurmUsers, int, error) {
	var r io.Reader
	switch path {
	case "":
		out, err := exec.Command("getent", "passwd").Output()
		if err != nil {
			return nil, 0, fmt.Errorf("getent passwd (give --slurm-users FILE instead): %w", err)
		}
		r = bytes.NewReader(out)
	case "-":
		r = os.Stdin
	default:
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, fmt.Errorf("--slurm-users: %w", err)
		}
		defer f.Close()
		r = f
	}
	return grafanausers.ReadSlurmUsers(r, minUID)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
