package report

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/test/browser"
)

var screenshotPath = flag.String("screenshot", "", "TestBrowser: also save the report's screenshot here (a relative path is taken from the module root, e.g. docs/report-example.png)")

// TestBrowser opens the HTML report in headless Chromium with JavaScript
// disabled and checks what it renders. Without Chromium it skips, and
// fails when CI=true.
func TestBrowser(t *testing.T) {
	path := browser.Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found (install Debian's chromium or set JOBSIGHT_CHROMIUM); CI=true requires this test")
		}
		t.Skip("chromium not found; install Debian's chromium or set JOBSIGHT_CHROMIUM")
	}
	dir := t.TempDir()
	b := browser.New(path, dir, t.Logf)

	page, err := HTML(gpu4HeldIdle())
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.html")
	if err := os.WriteFile(report, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := b.DOM(browser.FileURL(report))
	if err != nil {
		t.Fatal(err)
	}
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
	data, err := b.Screenshot(browser.FileURL(report), 1000, 1600)
	if err != nil {
		t.Fatal(err)
	}
	if *screenshotPath != "" {
		dst := *screenshotPath
		if !filepath.IsAbs(dst) {
			wd, _ := os.Getwd()
			root, err := browser.ModuleRoot(wd)
			if err != nil {
				t.Fatal(err)
			}
			dst = filepath.Join(root, dst)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", dst)
	}
}
