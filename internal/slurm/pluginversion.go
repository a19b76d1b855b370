package slurm

import (
	"debug/elf"
	"fmt"
)

// PluginVersion reads a Slurm plugin's plugin_version: the
// SLURM_VERSION_NUMBER of the headers it was built against (0xMMmmuu),
// which slurmd compares with its own when it loads the plugin (major and
// minor for a SPANK plugin).
func PluginVersion(path string) (uint32, error) {
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
				data, err := sec.Data() // a small plugin's read-only data
				if err != nil || uint64(len(data)) < s.Value-sec.Addr+4 {
					return 0, fmt.Errorf("%s: plugin_version: its section does not read whole (%v)", path, err)
				}
				return f.ByteOrder.Uint32(data[s.Value-sec.Addr:]), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no plugin_version symbol: not a Slurm plugin", path)
}
