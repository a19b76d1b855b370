package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var screenshotPath = flag.String("screenshot", "", "TestBrowser: also save the report's screenshot here (a relative path is taken from the module root, e.g. docs/report-example.png)")

// chromiumPath returns the browser to test with, or "" when there is none:
// $JOBSIGHT_CHROMIUM when set (a path that is not an executable counts as
// none), else Debian's /usr/bin/chromium, else chromium on $PATH.
func chromiumPath() string {
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

// browser runs headless Chromium commands with JavaScript disabled.
type browser struct {
	path string
	dir  string
	// blink: JavaScript is disabled with --blink-settings=scriptEnabled=false;
	// otherwise by the profile's content setting (see TestBrowser).
	blink bool
	runs  int
}

// run starts Chromium once with a fresh profile and returns its stdout.
func (b *browser) run(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	b.runs++
	profile := filepath.Join(b.dir, "profile-"+string(rune('a'+b.runs)))
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !b.blink {
		// Content setting 2 is "block": the profile runs no page script.
		prefs := `{"profile":{"default_content_setting_values":{"javascript":2}}}`
		if err := os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(prefs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile}
	if b.blink {
		all = append(all, "--blink-settings=scriptEnabled=false")
	}
	all = append(all, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.path, all...)
	cmd.Dir = b.dir
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

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// TestBrowser opens the HTML report in headless Chromium with JavaScript
// disabled and checks what it renders. Without Chromium it skips, and
// fails when CI=true.
//
// JavaScript is disabled with --blink-settings=scriptEnabled=false first.
// Chromium's headless mode implements --dump-dom and --screenshot through
// its DevTools protocol, and some versions (Debian's 156 among them) then
// print nothing and write no file at all. In that case the test disables
// JavaScript through the profile's content setting instead, after proving
// on a probe page that no script runs that way.
func TestBrowser(t *testing.T) {
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found (install Debian's chromium or set JOBSIGHT_CHROMIUM); CI=true requires this test")
		}
		t.Skip("chromium not found; install Debian's chromium or set JOBSIGHT_CHROMIUM")
	}
	dir := t.TempDir()
	b := &browser{path: path, dir: dir, blink: true}

	in := gpu4HeldIdle()
	page, err := HTML(in)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	dom, err := b.run(t, "--dump-dom", fileURL(report))
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if len(bytes.TrimSpace(dom)) == 0 {
		t.Logf("%s printed no DOM with --blink-settings=scriptEnabled=false; disabling JavaScript through the profile instead", path)
		b.blink = false
		probeNoScript(t, b)
		if dom, err = b.run(t, "--dump-dom", fileURL(report)); err != nil {
			t.Fatalf("chromium --dump-dom: %v", err)
		}
	}
	text := string(dom)
	for _, want := range []string{
		"Job 5120 on hpc1", // job id
		"inefficient",      // class
		"Three of the four GPUs were held but not used", // a cause title
		"-#SBATCH --gpus=4\n+#SBATCH --gpus=1",          // the sbatch diff
		"<svg", "GPU utilisation per GPU",               // a chart
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(text), "<script") {
		t.Error("rendered DOM has a script element")
	}

	shot := filepath.Join(dir, "report.png")
	if _, err := b.run(t, "--screenshot="+shot, "--window-size=1000,1600", fileURL(report)); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	if _, err := os.Stat(shot); err != nil && b.blink {
		t.Logf("%s wrote no screenshot with --blink-settings=scriptEnabled=false; disabling JavaScript through the profile instead", path)
		b.blink = false
		probeNoScript(t, b)
		if _, err := b.run(t, "--screenshot="+shot, "--window-size=1000,1600", fileURL(report)); err != nil {
			t.Fatalf("chromium --screenshot: %v", err)
		}
	}
	data, err := os.ReadFile(shot)
	if err != nil || len(data) == 0 {
		t.Fatalf("no screenshot written (%v)", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != (image.Point{1000, 1600}) {
		t.Errorf("screenshot is %v, want 1000x1600", got)
	}
	if n := distinctColours(img, 16); n < 16 {
		t.Errorf("screenshot has only %d colours: the page looks blank", n)
	}
	if *screenshotPath != "" {
		dst := *screenshotPath
		if !filepath.IsAbs(dst) {
			dst = filepath.Join(moduleRoot(t), dst)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", dst)
	}
}

// probeNoScript proves that the browser, as configured, runs no script: a
// page whose script would rewrite a paragraph must render unchanged.
func probeNoScript(t *testing.T, b *browser) {
	t.Helper()
	probe := filepath.Join(b.dir, "probe.html")
	src := `<!DOCTYPE html><html><body><p id="p">script did not run</p><script>document.getElementById("p").textContent = "script ran"</script></body></html>`
	if err := os.WriteFile(probe, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, err := b.run(t, "--dump-dom", fileURL(probe))
	if err != nil {
		t.Fatalf("chromium --dump-dom on the probe page: %v", err)
	}
	if !strings.Contains(string(dom), `<p id="p">script did not run</p>`) {
		t.Fatalf("JavaScript is not disabled in the browser: the probe page rendered as\n%s", dom)
	}
}

// distinctColours counts the colours of img, up to limit.
func distinctColours(img image.Image, limit int) int {
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

// moduleRoot is the directory holding go.mod, above the package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package")
		}
		dir = parent
	}
}
