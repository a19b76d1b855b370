//go:build mage

// Magefile builds the plugin backend with the Grafana plugin SDK's build
// targets, and the plugin archive a Grafana admin installs. Run it without
// installing mage:
//
//	go run github.com/magefile/mage -v            # dist/gpx_jobsight_linux_amd64
//	go run github.com/magefile/mage -l            # list every target
//	go run github.com/magefile/mage -v archive    # bin/plugin/<id>-<version>.zip (make plugin-archive)
//
// plugin.json lives at the top of the repository (the SDK expects it in
// src/): the callback below points the SDK there, so the executable name
// ("executable" in plugin.json) and the plugin id come from the one file.
// The frontend (npm run build) writes into the same dist/ without emptying it.

// Builds the Jobsight plugin backend (gpx_jobsight) with the Grafana plugin SDK.
package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/magefile/mage/mg"

	//mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

func init() {
	// Where plugin.json is, relative to the repository root.
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	})
}

// Default builds the backend for linux/amd64 into dist/.
var Default = LinuxAMD64

// LinuxAMD64 builds dist/gpx_jobsight_linux_amd64, the executable Grafana
// runs on Linux x86-64.
func LinuxAMD64() error {
	mg.Deps(build.Build.Linux)
	return nil
}

// Archive builds the backend for linux/amd64 and linux/arm64 into dist/
// and packs dist/ (the frontend must be built first: npm run build) as
// Grafana installs a plugin: bin/plugin/<id>-<version>.zip holding one
// directory named by the plugin id, plus one archive per platform
// (<id>-<version>.linux_<arch>.zip, that platform's executable only) and a
// SHA256SUMS file beside them.
func Archive() error {
	mg.SerialDeps(build.Build.Linux, build.Build.LinuxARM64)
	return packArchives("dist", filepath.Join("bin", "plugin"))
}

// Executables Archive ships; Grafana picks "<executable>_<os>_<arch>".
var archivePlatforms = []string{"linux_amd64", "linux_arm64"}

func packArchives(dist, outDir string) error {
	var meta struct {
		ID         string `json:"id"`
		Executable string `json:"executable"`
		Info       struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	b, err := os.ReadFile(filepath.Join(dist, "plugin.json"))
	if err != nil {
		return fmt.Errorf("%s/plugin.json: %w (build the frontend first: npm run build)", dist, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return fmt.Errorf("%s/plugin.json: %w", dist, err)
	}
	if meta.ID == "" || meta.Executable == "" || meta.Info.Version == "" || strings.Contains(meta.Info.Version, "%") {
		return fmt.Errorf("%s/plugin.json: id, executable and info.version must be set (got %q, %q, %q)", dist, meta.ID, meta.Executable, meta.Info.Version)
	}
	for _, need := range []string{"module.js", "README.md", "CHANGELOG.md", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(dist, need)); err != nil {
			return fmt.Errorf("%s/%s is missing: the archive needs it (npm run build copies it)", dist, need)
		}
	}
	var files []string
	err = filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dist, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	base := meta.ID + "-" + meta.Info.Version
	exePrefix := meta.Executable + "_"
	for _, p := range archivePlatforms {
		if _, err := os.Stat(filepath.Join(dist, exePrefix+p)); err != nil {
			return fmt.Errorf("%s: the %s executable is missing: %w", dist, p, err)
		}
	}
	// Every file but the executables of other platforms. The SDK's build
	// manifest (go_plugin_build_manifest) lists the Go sources' hashes for
	// the catalogue's review; it is kept in every archive.
	keep := func(platforms ...string) func(string) bool {
		return func(f string) bool {
			return !strings.HasPrefix(f, exePrefix) || slices.Contains(platforms, strings.TrimPrefix(f, exePrefix))
		}
	}
	names := []string{base + ".zip"}
	if err := writeZip(filepath.Join(outDir, names[0]), dist, meta.ID, files, keep(archivePlatforms...)); err != nil {
		return err
	}
	for _, p := range archivePlatforms {
		n := base + "." + p + ".zip"
		if err := writeZip(filepath.Join(outDir, n), dist, meta.ID, files, keep(p)); err != nil {
			return err
		}
		names = append(names, n)
	}
	var sums strings.Builder
	for _, n := range names {
		sum, err := fileSHA256(filepath.Join(outDir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, n)
		if err := os.WriteFile(filepath.Join(outDir, n+".sha256"), []byte(sum+"\n"), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(outDir, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s", sums.String())
	return nil
}

// writeZip packs the chosen files of dist under the directory id/, with
// the executables' mode 0755 and every other file's 0644, as Grafana's
// installer expects (it keeps the archive's modes).
func writeZip(path, dist, id string, files []string, keep func(string) bool) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	dirs := map[string]bool{}
	for _, rel := range files {
		if !keep(rel) {
			continue
		}
		// Parent directories first, as zip and Grafana's installer list them.
		parts := strings.Split(rel, "/")
		for i := 0; i < len(parts)-1; i++ {
			d := id + "/" + strings.Join(parts[:i+1], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				h := &zip.FileHeader{Name: d, Method: zip.Store}
				h.SetMode(fs.ModeDir | 0o755)
				if _, err := zw.CreateHeader(h); err != nil {
					return err
				}
			}
		}
		src := filepath.Join(dist, filepath.FromSlash(rel))
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if st.Mode()&0o111 != 0 {
			mode = 0o755
		}
		h := &zip.FileHeader{Name: id + "/" + rel, Method: zip.Deflate, Modified: st.ModTime()}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, in)
		in.Close()
		if err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
