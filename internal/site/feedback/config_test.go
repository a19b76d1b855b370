package feedback

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestSiteConfigErrorsNameTheOption(t *testing.T) {
	t.Parallel()
	if _, err := ParseConfig(strings.NewReader("elasticsearch: {urls: [http://es:9200]}\n")); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"", "elasticsearch.urls"},
		{"elasticsearch: {urls: [es:9200]}", "elasticsearch.urls[0]"},
		{"elasticsearch: {urls: [http://es]}\nprometheus: {url: prom}", "prometheus.url"},
		{"elasticsearch: {urls: [http://es]}\nhistory: {period: 1m}", "history.period"},
		{"elasticsearch: {urls: [http://es]}\nhistory: {advisory: {min_bad_share: 2}}", "history.advisory.min_bad_share"},
		{"elasticsearch: {urls: [http://es]}\njob_url: javascript:alert(1)", "job_url"},
		{"elasticsearch: {urls: [http://es]}\nanalysis: {short_job: -1s}", "analysis.short_job"},
		{"elasticsearch: {urls: [http://es]}\nnotify: {enabled: true}", "notify.smtp.host"},
		{"elasticsearch: {urls: [http://es]}\nnotfy: {}", "notfy"},
		{"elasticsearch: {urls: [http://es], result_index: jobsight-jobs}", "elasticsearch.result_index"},
		{"elasticsearch: {urls: [http://es]}\nhistory: {index: 'Bad Index*'}", "history.index"},
		{"elasticsearch: {urls: [http://es]}\ncluster: 'a b'", "cluster"},
	} {
		_, err := ParseConfig(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}

// Every top-level option of the site configuration is in docs/site-config.md.
func TestSiteOptionsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/site-config.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("yaml:\"([a-z_]+)\"").FindAllStringSubmatch(string(src), -1) {
		if !regexp.MustCompile("[`.]" + m[1] + "[`.]").Match(doc) {
			t.Errorf("option %s is not in docs/site-config.md", m[1])
		}
	}
}
