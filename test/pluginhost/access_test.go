package pluginhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/jobsight/jobsight/internal/jobmodel"
	"github.com/jobsight/jobsight/internal/store"
	"github.com/jobsight/jobsight/internal/store/elasticsearch"
	"github.com/jobsight/jobsight/test/stack"
)

// Who sees what, through the real executable with the identities Grafana
// sends: the signed ID token of a built-in account renamed like another
// user, of an account from an identity provider, forged ones; the alert
// scheduler's identity and a user imitating it; and the names a PI sees.
// The jobs are in a real Elasticsearch-API server (ZincSearch); Grafana's
// signing keys come from IDTokens, a test double of Grafana's
// /api/signing-keys/keys (Grafana itself is never run here).

// accessJobs are the stored jobs: user → account.
var accessJobs = []struct{ id, user, account string }{
	{"101", "alice", "chem"}, {"102", "bob", "chem"}, {"103", "root", "sys"}, {"104", "carol", "physics"},
}

type accessEnv struct {
	h     *Host
	ids   *IDTokens
	esURL string
	es    *stack.ESServer
	n     int64
}

func startAccessEnv(t *testing.T) *accessEnv {
	t.Helper()
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	es, err := stack.StartElasticsearch(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = es.Stop() })
	if es.External {
		t.Skip("needs its own job index: run with ZincSearch, not JOBSIGHT_TEST_ES_URL")
	}
	c, err := elasticsearch.New(elasticsearch.Config{URLs: []string{es.URL}, Username: es.User, Password: es.Password, CACertFile: es.CACertFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureIndex(ctx, jobmodel.DefaultJobIndex, jobmodel.JobMapping()); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-time.Hour).UTC()
	for _, j := range accessJobs {
		doc := map[string]any{
			"doc_id": "acc:" + j.id, "schema_version": 1, "source": "test", "cluster": "acc", "job_id": j.id,
			"user": j.user, "account": j.account, "partition": "cpu", "state": "COMPLETED", "final": true,
			"start_time": end.Add(-time.Hour).Format(time.RFC3339), "end_time": end.Format(time.RFC3339),
			"elapsed_seconds": 3600, "requested": map[string]any{"cpus": 4}, "sampling": map[string]any{},
			"agent_version": "test", "updated_at": end.Format(time.RFC3339),
		}
		body, _ := json.Marshal(doc)
		if err := c.Index(ctx, store.Doc{Kind: store.KindJobDoc, Index: jobmodel.DefaultJobIndex, ID: "acc:" + j.id, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := NewIDTokens()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ids.Close)
	e := &accessEnv{h: h, ids: ids, es: es}
	// The store answers searches a moment after the writes.
	admin := Caller{User: &backend.User{Login: "admin", Role: "Admin"}}
	deadline := time.Now().Add(time.Minute)
	for {
		users, err := e.jobUsers(t, e.ds(t, `{}`), admin)
		if err == nil && len(users) == len(accessJobs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stored jobs are not searchable: %v %v", users, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return e
}

// ds is a Jobsight datasource on the test store with more jsonData; each
// call is a new datasource (its own instance in the plugin).
func (e *accessEnv) ds(t *testing.T, extra string) Datasource {
	t.Helper()
	e.n++
	jd := map[string]any{}
	if err := json.Unmarshal([]byte(extra), &jd); err != nil {
		t.Fatal(err)
	}
	jd["elasticsearchUrl"], jd["elasticsearchUser"], jd["prometheusUrl"] = e.es.URL, e.es.User, "http://127.0.0.1:1"
	raw, _ := json.Marshal(jd)
	return Datasource{ID: 100 + e.n, UID: fmt.Sprintf("acc%d", e.n), Name: "Jobsight", JSONData: raw,
		SecureJSONData: map[string]string{"elasticsearchPassword": e.es.Password}}
}

// caller is a signed-in user as Grafana sends them, with Grafana's root URL
// pointing at the key server.
func (e *accessEnv) caller(login, role, token string) Caller {
	cfg := DefaultConfig()
	cfg["GF_APP_URL"] = e.ids.URL()
	return Caller{User: &backend.User{Login: login, Name: login, Email: login + "@uni.example", Role: role}, IDToken: token, Config: cfg}
}

func (e *accessEnv) query(t *testing.T, ds Datasource, c Caller, model map[string]any) backend.DataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	resp, err := e.h.QueryData(ctx, ds, c, Query{Model: model, From: now.Add(-6 * time.Hour), To: now})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}

// jobUsers are the users of the jobs a Jobs query answers, sorted.
func (e *accessEnv) jobUsers(t *testing.T, ds Datasource, c Caller) ([]string, error) {
	t.Helper()
	r := e.query(t, ds, c, map[string]any{"queryType": "jobs", "cluster": []string{"acc"}})
	if r.Error != nil {
		return nil, r.Error
	}
	return column(r.Frames, "user"), nil
}

// column is the values of a string field of the frames, sorted.
func column(frames data.Frames, name string) []string {
	var out []string
	for _, f := range frames {
		for _, fld := range f.Fields {
			if fld.Name != name {
				continue
			}
			for i := range fld.Len() {
				switch v := fld.At(i).(type) {
				case string:
					out = append(out, v)
				case *string:
					if v != nil {
						out = append(out, *v)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestWhoSeesWhat(t *testing.T) {
	e := startAccessEnv(t)
	all := []string{"alice", "bob", "carol", "root"}

	t.Run("a built-in account renamed like another user gets nothing of theirs", func(t *testing.T) {
		// Default settings but for the roles: Viewers are mapped by login.
		ds := e.ds(t, `{"fullAccessRoles":["Admin"]}`)
		for _, authBy := range []string{"", "password", "authproxy", "render"} {
			// What Grafana sends after `PUT /api/user {"login":"root"}` by
			// a Viewer with a built-in account — or an auth-proxy account
			// (Grafana lets those edit their login and email too), or its
			// image renderer's request for such an account.
			c := e.caller("root", "Viewer", e.ids.Token(Identity{UID: "u-mallory", Login: "root", Email: "root@uni.example", AuthenticatedBy: authBy}))
			users, err := e.jobUsers(t, ds, c)
			if err == nil || slices.Contains(users, "root") {
				t.Errorf("authenticatedBy %q: users %v, err %v; want a refusal", authBy, users, err)
			} else if !strings.Contains(err.Error(), "userIdMap") {
				t.Errorf("authenticatedBy %q: the refusal does not say what to do: %v", authBy, err)
			}
			r, err := e.h.CallResource(context.Background(), ds, c, "GET", "options?kind=users", nil)
			if err != nil || r.Status != http.StatusForbidden {
				t.Errorf("authenticatedBy %q: options: %v %v", authBy, r, err)
			}
		}
	})

	t.Run("an account from an identity provider is mapped by its login", func(t *testing.T) {
		ds := e.ds(t, `{"fullAccessRoles":["Admin"]}`)
		for _, authBy := range []string{"ldap", "oauth_generic_oauth", "auth.saml"} {
			c := e.caller("alice", "Viewer", e.ids.Token(Identity{UID: "u-alice", Login: "alice", Email: "alice@uni.example", AuthenticatedBy: authBy}))
			users, err := e.jobUsers(t, ds, c)
			if err != nil || !slices.Equal(users, []string{"alice"}) {
				t.Errorf("%s: users %v, err %v; want alice's job only", authBy, users, err)
			}
		}
	})

	t.Run("a built-in account is mapped by its user id", func(t *testing.T) {
		// Grafana 11/12: sub "user:<numeric id>", the uid in identifier;
		// a key is either.
		for _, m := range []string{`{"user:31":"carol"}`, `{"ucarol31":"carol"}`} {
			ds := e.ds(t, `{"fullAccessRoles":["Admin"],"userIdMap":`+m+`}`)
			c := e.caller("whatever-she-likes", "Viewer", e.ids.Token(Identity{ID: 31, UID: "ucarol31", Login: "whatever-she-likes", AuthenticatedBy: "password"}))
			if users, err := e.jobUsers(t, ds, c); err != nil || !slices.Equal(users, []string{"carol"}) {
				t.Errorf("userIdMap %s: users %v, err %v; want carol's job only", m, users, err)
			}
		}
	})

	t.Run("forged ID tokens are refused", func(t *testing.T) {
		ds := e.ds(t, `{"fullAccessRoles":["Admin"]}`)
		good := func() jwt.MapClaims {
			return e.ids.Claims(Identity{UID: "u-root", Login: "root", Email: "root@uni.example", AuthenticatedBy: "ldap"})
		}
		with := func(k string, v any) jwt.MapClaims { c := good(); c[k] = v; return c }
		other, err := NewIDTokens() // another Grafana's key
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		forged := map[string]string{
			"signed by another key": other.Sign(with("iss", e.ids.URL())),
			"expired":               e.ids.Sign(with("exp", time.Now().Add(-time.Hour).Unix())),
			"other org (audience)":  e.ids.Sign(with("aud", []string{"org:2"})),
			"other namespace":       e.ids.Sign(with("namespace", "org-2")),
			"alg none":              UnsignedToken("any", good()),
			"other issuer":          e.ids.Sign(with("iss", "http://grafana.elsewhere/")),
		}
		// The genuine token works, so each refusal is the forgery's.
		if users, err := e.jobUsers(t, ds, e.caller("root", "Viewer", e.ids.Sign(good()))); err != nil || !slices.Equal(users, []string{"root"}) {
			t.Fatalf("the genuine token: %v %v", users, err)
		}
		for name, tok := range forged {
			users, err := e.jobUsers(t, ds, e.caller("root", "Viewer", tok))
			if err == nil || len(users) > 0 || !strings.Contains(err.Error(), "token") {
				t.Errorf("%s: users %v, err %v; want a refusal naming the token", name, users, err)
			}
		}
	})

	t.Run("Grafana rotates its key", func(t *testing.T) {
		ds := e.ds(t, `{"fullAccessRoles":["Admin"]}`)
		id := Identity{UID: "u-alice", Login: "alice", AuthenticatedBy: "ldap"}
		if users, err := e.jobUsers(t, ds, e.caller("alice", "Viewer", e.ids.Token(id))); err != nil || len(users) != 1 {
			t.Fatalf("before rotation: %v %v", users, err)
		}
		if err := e.ids.Rotate(); err != nil {
			t.Fatal(err)
		}
		// The plugin refetches for a new key id, at most every 15 s.
		deadline := time.Now().Add(40 * time.Second)
		for {
			users, err := e.jobUsers(t, ds, e.caller("alice", "Viewer", e.ids.Token(id)))
			if err == nil && slices.Equal(users, []string{"alice"}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after rotation: %v %v", users, err)
			}
			time.Sleep(2 * time.Second)
		}
	})

	t.Run("alert evaluation sees every job whatever the roles", func(t *testing.T) {
		// What Grafana's alert scheduler sends: its service identity,
		// FromAlert, no ID token.
		scheduler := Caller{User: &backend.User{Login: "grafana_scheduler", Role: "Admin"}, FromAlert: true,
			Config: map[string]string{"GF_APP_URL": e.ids.URL()}}
		for _, roles := range []string{`{"fullAccessRoles":[]}`, `{}`, `{"fullAccessRoles":["Editor"]}`, `{"fullAccessRoles":["Viewer"]}`} {
			ds := e.ds(t, roles)
			users, err := e.jobUsers(t, ds, scheduler)
			if err != nil || !slices.Equal(users, all) {
				t.Errorf("%s: users %v, err %v; want every job", roles, users, err)
			}
			// And the hogging rule's query type is answered as the alert
			// engine, not refused (no Prometheus here: its error is the
			// store's, not an access refusal).
			r := e.query(t, ds, scheduler, map[string]any{"queryType": "hogging", "cluster": []string{"acc"}})
			if r.Error != nil && (r.Status == backend.StatusForbidden || strings.Contains(r.Error.Error(), "Slurm user")) {
				t.Errorf("%s: hogging refused the alert engine: %v", roles, r.Error)
			}
		}
	})

	t.Run("a viewer imitating the scheduler does not", func(t *testing.T) {
		ds := e.ds(t, `{"fullAccessRoles":[]}`)
		// A Viewer renamed grafana_scheduler, sending FromAlert (Grafana
		// forwards a user's FromAlert header); Grafana still sends their
		// role and their ID token.
		for name, c := range map[string]Caller{
			"built-in": e.caller("grafana_scheduler", "Viewer",
				e.ids.Token(Identity{UID: "u-mallory", Login: "grafana_scheduler", AuthenticatedBy: "password"})),
			"no email, no token": {User: &backend.User{Login: "grafana_scheduler", Role: "Viewer"}, Config: map[string]string{"GF_APP_URL": e.ids.URL()}},
			"admin role, token": e.caller("grafana_scheduler", "Admin",
				e.ids.Token(Identity{UID: "u-mallory", Login: "grafana_scheduler", AuthenticatedBy: "password"})),
		} {
			c.FromAlert = true
			c.User.Email = ""
			users, err := e.jobUsers(t, ds, c)
			if err == nil && len(users) > 0 {
				t.Errorf("%s: users %v; want nothing", name, users)
			}
		}
	})

	t.Run("a PI sees the real names of their account's users everywhere", func(t *testing.T) {
		ds := e.ds(t, `{"fullAccessRoles":["Admin"],"accountPIs":{"chem":["alice"]}}`)
		c := e.caller("alice", "Viewer", e.ids.Token(Identity{UID: "u-alice", Login: "alice", AuthenticatedBy: "ldap"}))
		want := []string{"alice", "bob"}
		if users, err := e.jobUsers(t, ds, c); err != nil || !slices.Equal(users, want) {
			t.Errorf("jobs: %v %v", users, err)
		}
		r := e.query(t, ds, c, map[string]any{"queryType": "variable", "variable": "users"})
		if got := column(r.Frames, "value"); r.Error != nil || !slices.Equal(got, want) {
			t.Errorf("users variable: %v %v", got, r.Error)
		}
		// Each value of the users variable filters the Jobs panel to
		// that user's jobs.
		for _, u := range want {
			r := e.query(t, ds, c, map[string]any{"queryType": "jobs", "user": []string{u}})
			if got := column(r.Frames, "user"); r.Error != nil || !slices.Equal(got, []string{u}) {
				t.Errorf("jobs of %s: %v %v", u, got, r.Error)
			}
		}
		r = e.query(t, ds, c, map[string]any{"queryType": "reservation", "groupBy": "user"})
		if r.Error != nil {
			t.Fatalf("reservation: %v", r.Error)
		}
		if got := column(r.Frames, "user"); !slices.Equal(got, want) {
			t.Errorf("reservation by user: %v", got)
		}
		r = e.query(t, ds, c, map[string]any{"queryType": "usageHistory", "groupBy": "user"})
		if r.Error == nil {
			var names []string
			for _, f := range r.Frames {
				for _, fld := range f.Fields {
					if l := fld.Labels["user"]; l != "" && !slices.Contains(names, l) {
						names = append(names, l)
					}
				}
			}
			for _, n := range names {
				if !slices.Contains(want, n) {
					t.Errorf("usage history names %q", n)
				}
			}
		}
		// A viewer who is no PI sees no other name at all.
		c = e.caller("carol", "Viewer", e.ids.Token(Identity{UID: "u-carol", Login: "carol", AuthenticatedBy: "ldap"}))
		r = e.query(t, ds, c, map[string]any{"queryType": "variable", "variable": "users"})
		if got := column(r.Frames, "value"); r.Error != nil || !slices.Equal(got, []string{"carol"}) {
			t.Errorf("carol's users variable: %v %v", got, r.Error)
		}
	})
}
