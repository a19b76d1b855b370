package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobsight/jobsight/internal/slurm"
)

func TestZZProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, _ := os.MkdirTemp("", "jsprobe-")
	defer os.RemoveAll(dir)
	sl, err := StartSlurm(ctx, filepath.Join(dir, "s"), SlurmOptions{GPUs: 2, GPUType: "a100", ExtraNodes: []string{"benchn2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Stop()
	for _, s := range []string{
		"sbatch --output=/dev/null -c 64 --mem=50M -p debug,multi --wrap 'sleep 60'",
		"sbatch --output=/dev/null -c 1 --mem=50M --gres=gpu:1 -p debug,multi --hold --wrap 'sleep 60'",
		"sbatch --output=/dev/null -c 64 --mem=50M --array=1,5,9 --wrap true",
	} {
		cmd := sl.Command(ctx, "sh", "-c", s)
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", s}
		out, err := cmd.CombinedOutput()
		fmt.Println(s, string(out), err)
	}
	time.Sleep(3 * time.Second)
	for _, r := range [][]string{{}, {"-r"}} {
		args := append([]string{"--noheader", "--all"}, r...)
		args = append(args, "-O", slurm.PollFormat())
		cmd := sl.Command(ctx, "squeue", args...)
		cmd.Env = append(cmd.Env, slurm.PollEnv...)
		out, err := cmd.CombinedOutput()
		fmt.Printf("=== squeue %v (%v)\n%s\n", r, err, out)
	}
}
