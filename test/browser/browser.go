// Package browser drives Debian's headless Chromium for tests that check
// what a person would see: a page's DOM with JavaScript disabled, and a
// screenshot. It is a test helper shared by the report and datasource
// tests; nothing in the product uses it.
package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Path returns the browser to test with, or "" when there is none:
// $JOBSIGHT_CHROMIUM when set (a path that is not an executable counts as
// none), else Debian's /usr/bin/chromium, else chromium on $PATH.
func Path() string {
	if p, ok := os.LookupEnv("JOBSIGHT_CHROMIUM"); ok {
		p, _ = exec.LookPath(p)
		return p
	}
	if p, err := exec.LookPath("/usr/bin/chromium"); err == nil {
		return p
	}
	p, _ := exec.LookPath("chromium")
	return p
}

// Browser runs headless Chromium commands with JavaScript disabled, each
// with a fresh profile under Dir.
//
// JavaScript is disabled with --blink-settings=scriptEnabled=false first.
// Chromium's headless mode implements --dump-dom and --screenshot through
// its DevTools protocol, and some versions (Debian's 156 among them) then
// print nothing and write no file at all. Then JavaScript is disabled
// through the profile's content setting instead, after proving on a probe
// page that no script runs that way.
type Browser struct {
	Path string
	Dir  string
	// Logf receives what the browser had to fall back to.
	Logf func(format string, args ...any)
	// profile: JavaScript is disabled by the profile's content setting,
	// not by --blink-settings.
	profile bool
	runs    int
}

// New returns a Browser for path, working under dir.
func New(path, dir string, logf func(string, ...any)) *Browser {
	return &Browser{Path: path, Dir: dir, Logf: logf}
}

// Run starts Chromium once with a fresh profile and returns its stdout.
func (b *Browser) Run(args ...string) ([]byte, error) {
	b.runs++
	profile := filepath.Join(b.Dir, fmt.Sprintf("profile-%d", b.runs))
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o755); err != nil {
		return nil, err
	}
	if b.profile {
		// Content setting 2 is "block": the profile runs no page script.
		prefs := `{"profile":{"default_content_setting_values":{"javascript":2}}}`
		if err := os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(prefs), 0o644); err != nil {
			return nil, err
		}
	}
	all := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile}
	if !b.profile {
		all = append(all, "--blink-settings=scriptEnabled=false")
	}
	all = append(all, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Path, all...)
	cmd.Dir = b.Dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		return nil, errors.Join(err, errors.New("stderr: "+lastLines(stderr.String(), 15)))
	}
	return stdout.Bytes(), nil
}

// DOM returns the DOM of url as rendered with JavaScript disabled.
func (b *Browser) DOM(url string) (string, error) {
	dom, err := b.Run("--dump-dom", url)
	if err != nil {
		return "", fmt.Errorf("chromium --dump-dom: %w", err)
	}
	if len(bytes.TrimSpace(dom)) == 0 && !b.profile {
		b.logf("%s printed no DOM with --blink-settings=scriptEnabled=false; disabling JavaScript through the profile instead", b.Path)
		if err := b.useProfile(); err != nil {
			return "", err
		}
		return b.DOM(url)
	}
	return string(dom), nil
}

// Screenshot renders url at width × height with JavaScript disabled and
// returns the PNG, checked to be an image of that size that is not blank.
func (b *Browser) Screenshot(url string, width, height int) ([]byte, error) {
	shot := filepath.Join(b.Dir, fmt.Sprintf("shot-%d.png", b.runs+1))
	if _, err := b.Run(fmt.Sprintf("--screenshot=%s", shot), fmt.Sprintf("--window-size=%d,%d", width, height), url); err != nil {
		return nil, fmt.Errorf("chromium --screenshot: %w", err)
	}
	if _, err := os.Stat(shot); err != nil && !b.profile {
		b.logf("%s wrote no screenshot with --blink-settings=scriptEnabled=false; disabling JavaScript through the profile instead", b.Path)
		if err := b.useProfile(); err != nil {
			return nil, err
		}
		return b.Screenshot(url, width, height)
	}
	data, err := os.ReadFile(shot)
	if err != nil || len(data) == 0 {
		return nil, fmt.Errorf("no screenshot written (%v)", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("screenshot is not a PNG: %w", err)
	}
	if got := img.Bounds().Size(); got != (image.Point{width, height}) {
		return nil, fmt.Errorf("screenshot is %v, want %dx%d", got, width, height)
	}
	if n := DistinctColours(img, 16); n < 16 {
		return nil, fmt.Errorf("screenshot has only %d colours: the page looks blank", n)
	}
	return data, nil
}

// useProfile switches to the profile's content setting and proves on a
// probe page that no script runs: a page whose script would rewrite a
// paragraph must render unchanged.
func (b *Browser) useProfile() error {
	b.profile = true
	probe := filepath.Join(b.Dir, "probe.html")
	src := `<!DOCTYPE html><html><body><p id="p">script did not run</p><script>document.getElementById("p").textContent = "script ran"</script></body></html>`
	if err := os.WriteFile(probe, []byte(src), 0o644); err != nil {
		return err
	}
	dom, err := b.Run("--dump-dom", FileURL(probe))
	if err != nil {
		return fmt.Errorf("chromium --dump-dom on the probe page: %w", err)
	}
	if !strings.Contains(string(dom), `<p id="p">script did not run</p>`) {
		return fmt.Errorf("JavaScript is not disabled in the browser: the probe page rendered as\n%s", dom)
	}
	return nil
}

func (b *Browser) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}

// FileURL is the file:// URL of a local path.
func FileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// DistinctColours counts the colours of img, up to limit.
func DistinctColours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y += 3 {
		for x := r.Min.X; x < r.Max.X; x += 3 {
			cr, cg, cb, ca := img.At(x, y).RGBA()
			seen[[4]uint32{cr, cg, cb, ca}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// ModuleRoot is the directory holding go.mod, at or above dir.
func ModuleRoot(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}
