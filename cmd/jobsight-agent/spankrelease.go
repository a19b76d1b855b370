package main

import (
	"debug/elf"
	"fmt"
	"io"
)

// spankRelease prints the Slurm release a SPANK plugin was built for
// (MAJOR.MINOR, from its plugin_version symbol, which slurmd compares
// with its own when it loads the plugin): jobsight-spank-install --ensure
// reads it this way from a plugin that predates the release string it
// now carries.
func spankRelease(path string, stdout, stderr io.Writer) int {
	v, err := pluginVersion(path)
	if err != nil {
		fmt.Fprintln(stderr, "jobsight-agent spank-release:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%d.%02d\n", v>>16&0xff, v>>8&0xff)
	return 0
}

// pluginVersion reads the uint32 plugin_version of a Slurm plugin.
func pluginVersion(path string) (uint32, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range syms {
		if s.Name != "plugin_version" || s.Size != 4 {
			continue
		}
		for _, sec := range f.Sections {
			if sec.Type == elf.SHT_PROGBITS && sec.Addr <= s.Value && s.Value+4 <= sec.Addr+sec.Size {
				b := make([]byte, 4)
				if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
					return 0, fmt.Errorf("%s: plugin_version: %w", path, err)
				}
				return f.ByteOrder.Uint32(b), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no plugin_version symbol: not a Slurm plugin", path)
}
