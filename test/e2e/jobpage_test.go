package e2e

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/test/browser"
)

var jobPageShot = flag.String("jobpage-screenshot", "", "TestDatasourceOnRealJobs: also save the job page's screenshot here (relative to the module root; docs/job-page.png is taken from the demo history by test/demo)")

// checkJobPageInBrowser opens the datasource's job page in headless
// Chromium with JavaScript off and checks what a person would read.
func checkJobPageInBrowser(t *testing.T, pageURL, jobID string) {
	t.Helper()
	path := browser.Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found (install Debian's chromium or set JOBSIGHT_CHROMIUM); CI=true requires this test")
		}
		t.Skip("chromium not found")
	}
	b := browser.New(path, t.TempDir(), t.Logf)
	dom, err := b.DOM(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Job " + jobID + " on " + cluster, "root", "<svg", "CPU"} {
		if !strings.Contains(dom, want) {
			t.Errorf("job page as rendered lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(dom), "<script") {
		t.Error("job page has a script element")
	}
	png, err := b.Screenshot(pageURL, 1000, 1400)
	if err != nil {
		t.Fatal(err)
	}
	if *jobPageShot != "" {
		wd, _ := os.Getwd()
		root, err := browser.ModuleRoot(wd)
		if err != nil {
			t.Fatal(err)
		}
		dst := *jobPageShot
		if !strings.HasPrefix(dst, "/") {
			dst = root + "/" + dst
		}
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("job page screenshot saved to %s", dst)
	}
}
