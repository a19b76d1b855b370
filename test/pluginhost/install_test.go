package pluginhost

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

type entry struct {
	name string
	mode fs.FileMode
	body string
}

func writeTestZip(t *testing.T, path string, entries []entry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func goodEntries() []entry {
	exe := fmt.Sprintf("p/gpx_p_%s_%s", runtime.GOOS, runtime.GOARCH)
	return []entry{
		{"p/", fs.ModeDir | 0o755, ""},
		{"p/plugin.json", 0o644, `{"id":"p","executable":"gpx_p","info":{"version":"1.2.3"}}`},
		{"p/module.js", 0o644, "define([],function(){})"},
		{exe, 0o755, "#!/bin/sh\n"},
	}
}

func TestInstallUnpacksAsGrafanaDoes(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "p-1.2.3.zip")
	writeTestZip(t, archive, goodEntries())
	sum := sha256.New()
	b, _ := os.ReadFile(archive)
	sum.Write(b)
	if err := os.WriteFile(archive+".sha256", []byte(hex.EncodeToString(sum.Sum(nil))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plugins := filepath.Join(dir, "plugins")
	in, err := Install(archive, plugins)
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != "p" || in.Version != "1.2.3" || in.Dir != filepath.Join(plugins, "p") {
		t.Errorf("installed %+v", in)
	}
	st, err := os.Stat(in.Executable)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("executable %s: %v %v", in.Executable, st, err)
	}
	if st, err := os.Stat(filepath.Join(in.Dir, "module.js")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("module.js: %v %v", st, err)
	}
}

func TestInstallRefusesWhatGrafanaRefuses(t *testing.T) {
	exe := fmt.Sprintf("gpx_p_%s_%s", runtime.GOOS, runtime.GOARCH)
	cases := map[string]struct {
		entries []entry
		sum     string
		want    string
	}{
		"zip slip":         {append(goodEntries(), entry{"p/../../evil", 0o644, "x"}), "", "not a plain relative path"},
		"absolute":         {append(goodEntries(), entry{"/etc/evil", 0o644, "x"}), "", "not a plain relative path"},
		"two top dirs":     {append(goodEntries(), entry{"q/x", 0o644, "x"}), "", "one top-level directory"},
		"link":             {append(goodEntries(), entry{"p/l", fs.ModeSymlink | 0o777, "/etc/shadow"}), "", "is a link"},
		"wrong checksum":   {goodEntries(), strings.Repeat("0", 64), "does not match"},
		"id is not dir":    {[]entry{{"q/plugin.json", 0o644, `{"id":"p","executable":"gpx_p","info":{"version":"1"}}`}, {"q/" + exe, 0o755, ""}}, "", "is not the plugin id"},
		"no backend":       {goodEntries()[:3], "", "has no backend for"},
		"not executable":   {append(goodEntries()[:3], entry{"p/" + exe, 0o644, ""}), "", "is not executable"},
		"no plugin.json":   {[]entry{{"p/module.js", 0o644, ""}}, "", "no plugin.json"},
		"not a zip at all": {nil, "", "zip"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			archive := filepath.Join(dir, "p.zip")
			if c.entries == nil {
				os.WriteFile(archive, []byte("not a zip"), 0o644)
			} else {
				writeTestZip(t, archive, c.entries)
			}
			if c.sum != "" {
				os.WriteFile(archive+".sha256", []byte(c.sum+"\n"), 0o644)
			}
			_, err := Install(archive, filepath.Join(dir, "plugins"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v, want an error with %q", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
				t.Fatal("a file was written outside the plugins directory")
			}
		})
	}
}
