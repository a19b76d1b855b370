package jobagent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/coreos/go-systemd/v22/unit"
	godbus "github.com/godbus/dbus/v5"
)

// ScopeTimeout bounds the move into the node agent's own scope.
const ScopeTimeout = 5 * time.Second

// leaveSpawnerCgroup moves the node agent into a transient systemd scope of
// its own, jobsight-agent-<node>.scope in system.slice, where systemd runs
// the node (as slurmstepd puts itself in <node>_slurmstepd.scope).
//
// The SPANK plugin spawns the agent from slurmd's prolog, so the agent
// starts in slurmd.service's cgroup. Under cgroup v2 that unit is delegated
// (Delegate=yes, which Slurm's cgroup/v2 requires) and slurmd runs in a
// child of it: a process left there when slurmd stops keeps the unit's
// tree populated, and systemd cannot start slurmd again ("Failed to attach
// to cgroup /system.slice/slurmd.service: Device or resource busy",
// status 219/CGROUP) until the agent exits — on a busy node, never. Seen
// on the cgroup v2 test node (test/cgroupv2). In its own scope the agent
// outlives slurmd restarts, and its own CPU and memory are no longer
// charged to slurmd.
//
// Nothing happens without systemd (no /run/systemd/system) or when the
// agent already runs in a scope of this name. It returns the scope's name
// ("" when it did not move); an error leaves the agent where it was.
func leaveSpawnerCgroup(ctx context.Context, node string, log *slog.Logger) (string, error) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return "", nil // not booted with systemd
	}
	name := "jobsight-agent-" + unit.UnitNameEscape(node) + ".scope"
	before, _ := os.ReadFile("/proc/self/cgroup")
	if strings.Contains(string(before), "/"+name+"\n") {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, ScopeTimeout)
	defer cancel()
	// systemd's private socket first (root, no dbus-daemon needed), then
	// the system bus.
	conn, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		var err2 error
		if conn, err2 = sddbus.NewSystemConnectionContext(ctx); err2 != nil {
			return "", fmt.Errorf("connecting to systemd: %w; over the system bus: %w", err, err2)
		}
	}
	defer conn.Close()
	start := func(name string) error {
		done := make(chan string, 1)
		props := []sddbus.Property{
			sddbus.PropDescription("Jobsight node agent for " + node),
			sddbus.PropSlice("system.slice"),
			sddbus.PropPids(uint32(os.Getpid())), // #nosec G115 -- a pid fits in 32 bits
			{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
		}
		if _, err := conn.StartTransientUnitContext(ctx, name, "fail", props, done); err != nil {
			return err
		}
		select {
		case r := <-done:
			if r != "done" {
				return fmt.Errorf("systemd answered %q", r)
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err = start(name)
	if err != nil && strings.Contains(err.Error(), "already exists") {
		// The scope of an agent that is still on its way out.
		name = "jobsight-agent-" + unit.UnitNameEscape(node) + "-" + strconv.Itoa(os.Getpid()) + ".scope"
		err = start(name)
	}
	if err != nil {
		return "", fmt.Errorf("starting %s: %w", name, err)
	}
	log.Info("node agent moved into a systemd scope of its own (slurmd can restart under it)", "scope", name,
		"from", strings.TrimSpace(lastCgroupLine(before)))
	return name, nil
}

// lastCgroupLine is the path of the unified hierarchy's line of
// /proc/self/cgroup (the last line), for the log.
func lastCgroupLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	_, path, _ := strings.Cut(lines[len(lines)-1], "::")
	return path
}
