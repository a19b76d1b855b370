package pluginhost

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// Installed is a plugin unpacked from its archive into a plugins directory,
// as Grafana's installer (grafana cli plugins install --pluginUrl, or the
// catalogue) leaves it: <plugins>/<id>/ with plugin.json, module.js and the
// backend executables.
type Installed struct {
	Dir        string // <plugins>/<id>
	ID         string
	Version    string
	Executable string // the backend for this OS and architecture
}

// Install unpacks a plugin archive (<id>-<version>[.<os>_<arch>].zip) into
// pluginsDir the way Grafana's installer does, refusing what it refuses: an
// archive whose SHA-256 does not match the .sha256 file beside it (when
// there is one), entries outside one top-level directory, absolute or
// ".." paths, links. It returns the executable Grafana would start on this
// machine, which must exist in the archive.
func Install(archive, pluginsDir string) (*Installed, error) {
	if err := verifyChecksum(archive); err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return nil, fmt.Errorf("plugin archive %s: %w", archive, err)
	}
	defer zr.Close()
	top := ""
	for _, f := range zr.File {
		name := f.Name
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || path.Clean("/"+name) != "/"+strings.TrimSuffix(name, "/") {
			return nil, fmt.Errorf("plugin archive %s: entry %q is not a plain relative path", archive, name)
		}
		root, _, _ := strings.Cut(name, "/")
		if top == "" {
			top = root
		} else if root != top {
			return nil, fmt.Errorf("plugin archive %s: entries under %q and %q: want one top-level directory", archive, top, root)
		}
		if f.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("plugin archive %s: entry %q is a link", archive, name)
		}
	}
	if top == "" {
		return nil, fmt.Errorf("plugin archive %s is empty", archive)
	}
	dir := filepath.Join(pluginsDir, top)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	for _, f := range zr.File {
		dst := filepath.Join(pluginsDir, filepath.FromSlash(f.Name))
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := extract(f, dst); err != nil {
			return nil, fmt.Errorf("plugin archive %s: %s: %w", archive, f.Name, err)
		}
	}
	var meta struct {
		ID         string `json:"id"`
		Executable string `json:"executable"`
		Info       struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "plugin.json"))
	if err != nil {
		return nil, fmt.Errorf("plugin archive %s: no plugin.json under %s/: %w", archive, top, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("plugin archive %s: plugin.json: %w", archive, err)
	}
	if meta.ID != top {
		return nil, fmt.Errorf("plugin archive %s: top-level directory %q is not the plugin id %q", archive, top, meta.ID)
	}
	exe := filepath.Join(dir, fmt.Sprintf("%s_%s_%s", meta.Executable, runtime.GOOS, runtime.GOARCH))
	st, err := os.Stat(exe)
	if err != nil {
		return nil, fmt.Errorf("plugin archive %s has no backend for %s/%s: %w", archive, runtime.GOOS, runtime.GOARCH, err)
	}
	if st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("plugin archive %s: %s is not executable (mode %v)", archive, filepath.Base(exe), st.Mode())
	}
	return &Installed{Dir: dir, ID: meta.ID, Version: meta.Info.Version, Executable: exe}, nil
}

func extract(f *zip.File, dst string) error {
	in, err := f.Open()
	if err != nil {
		return err
	}
	defer in.Close()
	mode := f.Mode().Perm() &^ 0o022
	if mode == 0 {
		mode = 0o644
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	// At most the size the entry declares, and never more than
	// maxPluginFile: a crafted archive cannot fill the disk.
	if f.UncompressedSize64 > maxPluginFile {
		out.Close()
		return fmt.Errorf("declares %d bytes, more than a plugin file may hold (%d)", f.UncompressedSize64, maxPluginFile)
	}
	size := int64(f.UncompressedSize64)                // #nosec G115 -- at most maxPluginFile, checked above
	n, err := io.Copy(out, io.LimitReader(in, size+1)) // #nosec G110 -- bounded by the declared size, itself bounded above
	if err == nil && n != size {
		err = fmt.Errorf("holds %d bytes, not the %d its header declares", n, f.UncompressedSize64)
	}
	if err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// maxPluginFile bounds one file of a plugin archive (the backend
// executables are about 30 MiB).
const maxPluginFile = 512 << 20

// verifyChecksum compares the archive with <archive>.sha256 (one hex
// digest, as `make plugin-archive` writes it and an admin checks it with
// sha256sum) when that file exists.
func verifyChecksum(archive string) error {
	f, err := os.Open(archive + ".sha256")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	want, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	a, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer a.Close()
	h := sha256.New()
	if _, err := io.Copy(h, a); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("plugin archive %s: SHA-256 %s does not match %s.sha256 (%s)", archive, got, filepath.Base(archive), want)
	}
	return nil
}
