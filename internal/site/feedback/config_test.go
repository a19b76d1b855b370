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
		{"elasticsearch: {urls: [http://es]}\nreport: {username: reader}", "report.username"},
		{"elasticsearch: {urls: [http://es], username: site, password_file: /p}\nreport: {username: site, password_file: /r}", "report.username"},
		{"elasticsearch: {urls: [http://es]}\nreport: {user: reader}", "unknown option \"user\" in section report"},
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

// A setgid run reads with the report credential or, where the store takes
// no credential, with none; never with the elasticsearch section's.
func TestReportElasticsearchNeverUsesTheWritingCredential(t *testing.T) {
	t.Parallel()
	writer := "elasticsearch: {urls: [http://es], username: site, password_file: /etc/jobsight/site-pw}\n"
	for _, tc := range []struct {
		yaml, wantUser, wantFile string
		privileged               bool
		wantErr                  error
	}{
		{writer + "report: {username: reader, password_file: /etc/jobsight/report-pw}", "reader", "/etc/jobsight/report-pw", true, nil},
		{writer + "report: {username: reader, password_file: /etc/jobsight/report-pw}", "reader", "/etc/jobsight/report-pw", false, nil},
		{writer, "", "", true, ErrNoReportCredential},
		{writer, "site", "/etc/jobsight/site-pw", false, nil},
		{"elasticsearch: {urls: [http://es]}", "", "", true, nil},
	} {
		cfg, err := ParseConfig(strings.NewReader(tc.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		es, err := cfg.ReportElasticsearch(tc.privileged)
		if err != tc.wantErr || es.Username != tc.wantUser || es.PasswordFile != tc.wantFile {
			t.Errorf("%q privileged %v: user %q file %q err %v; want %q %q %v", tc.yaml, tc.privileged, es.Username, es.PasswordFile, err,
				tc.wantUser, tc.wantFile, tc.wantErr)
		}
	}
}
