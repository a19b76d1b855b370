package plugin_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/pkg/plugin"
	"github.com/jobsight/jobsight/test/stack"
)

// callResource asks a resource route as u and returns the status and body.
func callResource(t *testing.T, ds *plugin.Datasource, u *backend.User, pathAndQuery string) (int, string) {
	t.Helper()
	path, _, _ := strings.Cut(pathAndQuery, "?")
	var status int
	var body []byte
	err := ds.CallResource(context.Background(), &backend.CallResourceRequest{
		PluginContext: backend.PluginContext{OrgID: 1, User: u, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "jobsight"}},
		Path:          path, Method: "GET", URL: pathAndQuery,
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		status = r.Status
		body = append(body, r.Body...)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return status, string(body)
}

// dataLinkRef matches ${__data.fields.<name>} with an optional format.
var dataLinkRef = regexp.MustCompile(`\$\{__data\.fields\.([a-z_]+)(:percentencode)?\}`)

// expandLink fills a data link's row fields and dashboard variables as
// Grafana does.
func expandLink(link string, row map[string]string, vars map[string]string) string {
	link = dataLinkRef.ReplaceAllStringFunc(link, func(m string) string {
		sub := dataLinkRef.FindStringSubmatch(m)
		if sub[2] != "" {
			return url.QueryEscape(row[sub[1]])
		}
		return row[sub[1]]
	})
	for k, v := range vars {
		link = strings.ReplaceAll(link, "${"+k+"}", v)
	}
	return link
}

// shippedJobLinks are every data link of the shipped dashboards that opens
// one job: the job detail dashboard (var-job) or the job page.
func shippedJobLinks(t *testing.T) []string {
	t.Helper()
	root, err := stack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	urlField := regexp.MustCompile(`"url": "([^"]*)"`)
	seen := map[string]bool{}
	var links []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range urlField.FindAllStringSubmatch(string(raw), -1) {
			l := m[1]
			if !strings.Contains(l, "__data.fields.") || !(strings.Contains(l, "var-job=") || strings.Contains(l, "/resources/job?")) || seen[l] {
				continue
			}
			seen[l] = true
			links = append(links, l)
		}
	}
	if len(links) < 2 {
		t.Fatalf("found %d job links in the dashboards", len(links))
	}
	return links
}

// Two jobs of one Slurm id on one cluster (the id was reused): the first
// is stored as c1:42, the later one as c1:42@<submit>, of another user. In
// the real ZincSearch, every way a row leads to a job — the Jobs table's
// own link, each shipped dashboard's data links, the jobs variable's
// values — opens that row's job, not the newest one with the id. Before
// the fix, c1:42 named "the newest job 42" and opened bob's job.
func TestLinksOpenTheRowsJobOfAReusedID(t *testing.T) {
	srv := startServers(t)
	index := uniqueIndex(t, "reuse")
	now := time.Now().UTC().Truncate(time.Second)
	mk := func(docID, user string, submit, start, end time.Time) jobmodel.Job {
		j := jobmodel.Job{DocID: docID, Cluster: "c1", JobID: "42", SlurmJobID: 42, User: user, Account: "acct-" + user, Partition: "p",
			State: "COMPLETED", Final: true, SubmitTime: jobmodel.At(submit), StartTime: jobmodel.At(start), EndTime: jobmodel.At(end),
			ElapsedSeconds: jobmodel.Ptr(end.Sub(start).Seconds()), Sampling: jobmodel.Sampling{IntervalSeconds: 5, Count: 10}}
		j.Requested.CPUs = jobmodel.Ptr(int64(1))
		return j
	}
	first := mk("c1:42", "alice", now.Add(-50*time.Minute), now.Add(-49*time.Minute), now.Add(-40*time.Minute))
	laterSubmit := now.Add(-30 * time.Minute)
	later := mk(jobmodel.ReuseDocID("c1:42", laterSubmit), "bob", laterSubmit, now.Add(-29*time.Minute), now.Add(-20*time.Minute))
	indexJobs(t, srv.es, index, first, later)
	byDoc := map[string]jobmodel.Job{first.DocID: first, later.DocID: later}

	ds := newDatasource(t, srv, index, nil)
	admin := &backend.User{Login: "admin", Role: "Admin"}

	// openedBy follows a link and returns the user of the job it shows.
	openedBy := func(t *testing.T, link string) string {
		t.Helper()
		u, err := url.Parse(link)
		if err != nil {
			t.Fatalf("link %q: %v", link, err)
		}
		if i := strings.Index(u.Path, "/resources/"); i >= 0 {
			status, body := callResource(t, ds, admin, u.Path[i+len("/resources/"):]+"?"+u.RawQuery)
			if status != 200 {
				t.Fatalf("job page %s: HTTP %d %s", link, status, body)
			}
			for _, who := range []string{"alice", "bob"} {
				if strings.Contains(body, who) {
					return who
				}
			}
			t.Fatalf("job page %s names neither job's user", link)
		}
		// The job detail dashboard: its panels ask with jobId = var-job.
		q := u.Query()
		model := map[string]any{"queryType": "jobs", "jobId": q.Get("var-job")}
		if c := q.Get("var-cluster"); c != "" {
			model["cluster"] = []string{c}
		}
		fs := ask(t, ds, admin, model)
		users, _ := fs[0].FieldByName("user")
		if users == nil || users.Len() != 1 {
			t.Fatalf("job detail %s: the Job facts panel shows %d jobs, want exactly one", link, fs[0].Rows())
		}
		who, _ := users.ConcreteAt(0)
		tl := ask(t, ds, admin, map[string]any{"queryType": "jobTimeline", "jobId": q.Get("var-job")})
		for _, f := range tl {
			if f.Name == "events" {
				texts, _ := f.FieldByName("text")
				for i := 0; i < texts.Len(); i++ {
					if s := texts.At(i).(string); !strings.Contains(s, "Job "+byDocUser(byDoc, fmt.Sprint(who))+" ") {
						t.Errorf("job detail %s: the timeline's event %q is not of %s's job", link, s, who)
					}
				}
			}
		}
		return fmt.Sprint(who)
	}

	fs := ask(t, ds, admin, map[string]any{"queryType": "jobs"})
	f := fs[0]
	idField, _ := f.FieldByName("job_id")
	links := append(shippedJobLinks(t), idField.Config.Links[0].URL)
	vars := map[string]string{"datasource": "jobsight", "__url_time_range": "from=now-1h&to=now"}
	if f.Rows() != 2 {
		t.Fatalf("the Jobs table has %d rows, want both jobs 42", f.Rows())
	}
	for i := 0; i < f.Rows(); i++ {
		row := map[string]string{}
		for _, fld := range f.Fields {
			if v, ok := fld.ConcreteAt(i); ok {
				row[fld.Name] = fmt.Sprint(v)
			}
		}
		want := byDoc[row["doc_id"]].User
		for _, l := range links {
			t.Run(row["doc_id"]+" "+l, func(t *testing.T) {
				if got := openedBy(t, expandLink(l, row, vars)); got != want {
					t.Errorf("the link of %s's row (%s) opens %s's job", want, row["doc_id"], got)
				}
			})
		}
	}

	// The per-job Reserved vs used table carries each row's document for
	// its links too.
	rfs := ask(t, ds, admin, map[string]any{"queryType": "reservation"})
	if docs, _ := rfs[0].FieldByName("doc_id"); docs == nil || docs.Len() != 2 || docs.At(0) == docs.At(1) {
		t.Errorf("the per-job reservation table does not name each row's document: %v", docs)
	}

	// The jobs variable offers both, each value naming its own job.
	vfs := ask(t, ds, admin, map[string]any{"queryType": "variable", "variable": "jobs", "cluster": []string{"c1"}})
	values, _ := vfs[0].FieldByName("value")
	if values.Len() != 2 {
		t.Fatalf("the jobs variable has %d values, want 2", values.Len())
	}
	for i := 0; i < values.Len(); i++ {
		v := values.At(i).(string)
		if got := openedBy(t, "/d/jobsight-job-detail/x?var-cluster=c1&var-job="+url.QueryEscape(v)); got != byDoc[v].User {
			t.Errorf("variable value %s opens %s's job, want %s's", v, got, byDoc[v].User)
		}
	}

	// A bare Slurm id with its cluster still means the newest job.
	if got := eventsJob(t, ask(t, ds, admin, map[string]any{"queryType": "jobTimeline", "jobId": "42", "cluster": []string{"c1"}})); got != later.DocID {
		t.Errorf("jobId 42 in c1 gives %q, want the newest job %s", got, later.DocID)
	}
}

// byDocUser returns the doc id of user's job.
func byDocUser(byDoc map[string]jobmodel.Job, user string) string {
	for id, j := range byDoc {
		if j.User == user {
			return id
		}
	}
	return "?"
}

// eventsJob returns the document id named by a timeline's events ("Job <doc id> ...").
func eventsJob(t *testing.T, fs data.Frames) string {
	t.Helper()
	for _, f := range fs {
		if f.Name == "events" {
			if texts, _ := f.FieldByName("text"); texts != nil && texts.Len() > 0 {
				s := strings.TrimPrefix(texts.At(0).(string), "Job ")
				id, _, _ := strings.Cut(s, " ")
				return id
			}
		}
	}
	return ""
}
