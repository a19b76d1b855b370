package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// artefact is what a release file says of itself, read from its contents
// (not its name).
type artefact struct {
	kind    string // deb, rpm, plugin
	name    string // package name, or the plugin id
	version string // upstream version (no package revision)
	release string // the package revision (deb, rpm)
	arch    string // deb/rpm architecture; for the plugin the platforms of its executables, comma-separated
	// execVersions are the versions the plugin's executables were built
	// with (the SDK's build info, from package.json), by file name.
	execVersions map[string]string
}

// readDeb reads a .deb's control file: an ar archive whose control.tar.gz
// holds ./control (dpkg's format, as nfpm writes it).
func readDeb(file string) (artefact, error) {
	f, err := openFile(file)
	if err != nil {
		return artefact{}, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	magic := make([]byte, 8)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "!<arch>\n" {
		return artefact{}, fmt.Errorf("%s: not a Debian package (no ar header)", file)
	}
	for {
		hdr := make([]byte, 60)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return artefact{}, fmt.Errorf("%s: no control.tar.gz member", file)
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(hdr[0:16])), "/")
		size, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || size < 0 {
			return artefact{}, fmt.Errorf("%s: ar member %q: bad size", file, name)
		}
		if strings.HasPrefix(name, "control.tar") {
			if name != "control.tar.gz" {
				return artefact{}, fmt.Errorf("%s: %s: only control.tar.gz is read", file, name)
			}
			return debControl(file, io.LimitReader(r, size))
		}
		if _, err := r.Discard(int(size + size%2)); err != nil {
			return artefact{}, fmt.Errorf("%s: %w", file, err)
		}
	}
}

func debControl(file string, r io.Reader) (artefact, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return artefact{}, fmt.Errorf("%s: control.tar.gz: %w", file, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return artefact{}, fmt.Errorf("%s: control.tar.gz has no control file", file)
		}
		if path.Clean(h.Name) != "control" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
		if err != nil {
			return artefact{}, err
		}
		a := artefact{kind: "deb"}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(line, " ") {
				continue
			}
			v = strings.TrimSpace(v)
			switch k {
			case "Package":
				a.name = v
			case "Version":
				// upstream-revision; the upstream version has no hyphen.
				if i := strings.LastIndexByte(v, '-'); i >= 0 {
					a.version, a.release = v[:i], v[i+1:]
				} else {
					a.version = v
				}
			case "Architecture":
				a.arch = v
			}
		}
		if a.name == "" || a.version == "" || a.arch == "" {
			return artefact{}, fmt.Errorf("%s: control lacks Package, Version or Architecture", file)
		}
		return a, nil
	}
}

// rpmTags are the header tags read: NAME, VERSION, RELEASE, ARCH.
const (
	rpmTagName    = 1000
	rpmTagVersion = 1001
	rpmTagRelease = 1002
	rpmTagArch    = 1022
	rpmString     = 6
)

// readRPM reads an .rpm's header: the 96-byte lead, the signature header
// (padded to 8 bytes), then the header with the package's tags.
func readRPM(file string) (artefact, error) {
	f, err := openFile(file)
	if err != nil {
		return artefact{}, err
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return artefact{}, err
	}
	bad := func(what string) (artefact, error) {
		return artefact{}, fmt.Errorf("%s: not an RPM package (%s)", file, what)
	}
	if len(b) < 96 || !bytes.Equal(b[:4], []byte{0xed, 0xab, 0xee, 0xdb}) {
		return bad("no lead")
	}
	off := 96
	header := func() (index []byte, store []byte, next int, err error) {
		if len(b) < off+16 || !bytes.Equal(b[off:off+3], []byte{0x8e, 0xad, 0xe8}) {
			return nil, nil, 0, errors.New("no header magic")
		}
		n := int(binary.BigEndian.Uint32(b[off+8:]))
		size := int(binary.BigEndian.Uint32(b[off+12:]))
		end := off + 16 + 16*n + size
		if n > 1<<16 || size > 64<<20 || end > len(b) {
			return nil, nil, 0, errors.New("header out of bounds")
		}
		return b[off+16 : off+16+16*n], b[off+16+16*n : end], end, nil
	}
	_, _, next, err := header() // the signature
	if err != nil {
		return bad(err.Error())
	}
	off = (next + 7) &^ 7
	index, store, _, err := header()
	if err != nil {
		return bad(err.Error())
	}
	a := artefact{kind: "rpm"}
	for i := 0; i+16 <= len(index); i += 16 {
		tag := binary.BigEndian.Uint32(index[i:])
		typ := binary.BigEndian.Uint32(index[i+4:])
		at := int(binary.BigEndian.Uint32(index[i+8:]))
		if typ != rpmString || at >= len(store) {
			continue
		}
		v := store[at:]
		if z := bytes.IndexByte(v, 0); z >= 0 {
			v = v[:z]
		}
		switch tag {
		case rpmTagName:
			a.name = string(v)
		case rpmTagVersion:
			a.version = string(v)
		case rpmTagRelease:
			a.release = string(v)
		case rpmTagArch:
			a.arch = string(v)
		}
	}
	if a.name == "" || a.version == "" || a.arch == "" {
		return bad("no NAME, VERSION or ARCH tag")
	}
	return a, nil
}

// buildInfoVersion finds the version the Grafana plugin SDK's build
// stamps into the backend (-X …/build/buildinfo.buildInfoJSON, taken from
// package.json): {"time":…,"pluginID":"<id>","version":"<v>"}.
var buildInfoVersion = regexp.MustCompile(`"pluginID":"[^"]*","version":"([^"]*)"`)

// readPluginZip reads the plugin archive: <id>/plugin.json's info.version
// and the build info of each executable <id>/<executable>_<os>_<arch>.
func readPluginZip(file string) (artefact, error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return artefact{}, fmt.Errorf("%s: %w", file, err)
	}
	defer zr.Close()
	var meta struct {
		ID         string `json:"id"`
		Executable string `json:"executable"`
		Info       struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	a := artefact{kind: "plugin", execVersions: map[string]string{}}
	for _, f := range zr.File {
		if strings.Count(f.Name, "/") == 1 && strings.HasSuffix(f.Name, "/plugin.json") {
			b, err := readZipFile(f, 1<<20)
			if err != nil {
				return artefact{}, fmt.Errorf("%s: %s: %w", file, f.Name, err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				return artefact{}, fmt.Errorf("%s: %s: %w", file, f.Name, err)
			}
			if dir := path.Dir(f.Name); dir != meta.ID {
				return artefact{}, fmt.Errorf("%s: plugin.json of %q is in %s/, not in a directory named by the id", file, meta.ID, dir)
			}
		}
	}
	if meta.ID == "" || meta.Executable == "" || meta.Info.Version == "" {
		return artefact{}, fmt.Errorf("%s: no <id>/plugin.json with id, executable and info.version", file)
	}
	a.name, a.version = meta.ID, meta.Info.Version
	var platforms []string
	prefix := meta.ID + "/" + meta.Executable + "_"
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || strings.HasSuffix(f.Name, "/") {
			continue
		}
		b, err := readZipFile(f, 512<<20)
		if err != nil {
			return artefact{}, fmt.Errorf("%s: %s: %w", file, f.Name, err)
		}
		v := "(no build info)"
		if m := buildInfoVersion.FindSubmatch(b); m != nil {
			v = string(m[1])
		}
		a.execVersions[path.Base(f.Name)] = v
		platforms = append(platforms, strings.TrimPrefix(f.Name, prefix))
	}
	if len(platforms) == 0 {
		return artefact{}, fmt.Errorf("%s: no backend executable %s*", file, prefix)
	}
	a.arch = strings.Join(platforms, ",")
	return a, nil
}

func readZipFile(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}
