package plugin

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// identitySite is a datasource whose Grafana (the key server) signs ID
// tokens, and the requests Grafana 11/12 send it.
type identitySite struct {
	t  *testing.T
	ks *keyServer
	ds *Datasource
}

func newIdentitySite(t *testing.T, jsonData string) *identitySite {
	t.Helper()
	ks := newKeyServer(t)
	jd := `{"elasticsearchUrl":"http://127.0.0.1:1","prometheusUrl":"http://127.0.0.1:1",` + strings.TrimPrefix(jsonData, "{")
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "jobsight", JSONData: []byte(jd)})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	if ds.settingsErr != nil {
		t.Fatal(ds.settingsErr)
	}
	return &identitySite{t: t, ks: ks, ds: ds}
}

// grafanaToken is the ID token Grafana 11/12 sign for a user: sub is
// "user:<numeric database id>", identifier the uid, username and email,
// authenticatedBy the sign-in method, 10 minutes' validity, audience and
// namespace of org 1, issuer root_url.
func (s *identitySite) grafanaToken(id int, uid, login, email, authBy string) string {
	now := time.Now()
	return s.ks.token(jwt.MapClaims{"iss": s.ks.root(), "aud": []string{"org:1"}, "sub": "user:" + itoa(id), "identifier": uid,
		"type": "user", "namespace": "default", "username": login, "email": email, "authenticatedBy": authBy,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// pluginContext is what Grafana passes with a user's request: the org,
// the user and its role, and root_url as GF_APP_URL.
func (s *identitySite) pluginContext(u *backend.User) backend.PluginContext {
	return backend.PluginContext{OrgID: 1, User: u, GrafanaConfig: backend.NewGrafanaCfg(map[string]string{"GF_APP_URL": s.ks.root()}),
		DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "jobsight"}}
}

// identity asks GET resources/identity (with query) as u, forwarding token
// as Grafana does (X-Grafana-Id).
func (s *identitySite) identity(u *backend.User, token, query string) (int, string, Identity) {
	s.t.Helper()
	path := "identity"
	if query != "" {
		path += "?" + query
	}
	headers := map[string][]string{}
	if token != "" {
		headers[backend.GrafanaUserSignInTokenHeaderName] = []string{token}
	}
	var status int
	var body []byte
	err := s.ds.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: s.pluginContext(u),
		Path: "identity", Method: "GET", URL: path, Headers: headers},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			if r.Status != 0 {
				status = r.Status
			}
			body = append(body, r.Body...)
			return nil
		}))
	if err != nil {
		s.t.Fatal(err)
	}
	var id Identity
	if status == 200 {
		if err := json.Unmarshal(body, &id); err != nil {
			s.t.Fatalf("answer %s: %v", body, err)
		}
	}
	return status, string(body), id
}

// queryRefusal runs a Jobs query as u with token, as Grafana sends it
// (the ID token as a forwarded HTTP header), and returns its error.
func (s *identitySite) queryRefusal(u *backend.User, token string) string {
	s.t.Helper()
	headers := map[string]string{}
	if token != "" {
		headers["http_"+backend.GrafanaUserSignInTokenHeaderName] = token
	}
	resp, err := s.ds.QueryData(context.Background(), &backend.QueryDataRequest{PluginContext: s.pluginContext(u), Headers: headers,
		Queries: []backend.DataQuery{{RefID: "A", JSON: []byte(`{"queryType":"jobs"}`), TimeRange: backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}}}})
	if err != nil {
		s.t.Fatal(err)
	}
	if e := resp.Responses["A"].Error; e != nil {
		return e.Error()
	}
	return ""
}

const identityJSON = `{"fullAccessRoles":["Admin"],"userIdMap":{"user:42":"carol"},"userMap":{"ops":"root"},"accountPIs":{"chem":["alice"]}}`

// Any signed-in user learns whom they are mapped to, through which claims
// and which rule; the answer holds no token.
func TestIdentityRouteSaysWhomAndWhy(t *testing.T) {
	s := newIdentitySite(t, identityJSON)
	viewer := func(login string) *backend.User {
		return &backend.User{Login: login, Email: login + "@uni.edu", Role: "Viewer"}
	}
	cases := []struct {
		name, login, token  string
		user, scope, source string
		rule                []string
		accounts            string
	}{
		{"LDAP account by login", "alice", s.grafanaToken(7, "fe1k2l", "alice", "alice@uni.edu", "ldap"),
			"alice", "own", "idToken", []string{"userMapping login", "ldap", "trustedAuthMethods"}, "chem"},
		{"SAML account in userMap", "ops", s.grafanaToken(8, "ab3c", "ops", "ops@uni.edu", "auth.saml"),
			"root", "own", "idToken", []string{`userMap entry for login \"ops\"`, "auth.saml"}, ""},
		{"built-in account by its id", "cara", s.grafanaToken(42, "q9w8e7", "cara", "cara@uni.edu", "password"),
			"carol", "own", "idToken", []string{`userIdMap entry \"user:42\"`}, ""},
	}
	for _, c := range cases {
		status, body, id := s.identity(viewer(c.login), c.token, "")
		a := id.Answer
		if status != 200 || a == nil || !a.Allowed || a.SlurmUser != c.user || a.Scope != c.scope || a.Source != c.source ||
			strings.Join(a.PIAccounts, ",") != c.accounts || id.About != "you" || id.Login != c.login {
			t.Errorf("%s: %d %s", c.name, status, body)
			continue
		}
		for _, r := range c.rule {
			if !strings.Contains(body, r) {
				t.Errorf("%s: the answer does not say %q: %s", c.name, r, body)
			}
		}
		if strings.Contains(body, c.token) || strings.Contains(body, strings.Split(c.token, ".")[2]) {
			t.Errorf("%s: the answer holds the token", c.name)
		}
	}
	// The ids userIdMap takes are shown to their owner.
	_, _, id := s.identity(viewer("cara"), s.grafanaToken(42, "q9w8e7", "cara", "", "password"), "")
	if id.Answer == nil || id.GrafanaUserID != "user:42" || id.GrafanaUID != "q9w8e7" || id.AuthenticatedBy != "password" {
		t.Errorf("ids: %+v", id.Answer)
	}
	// A full-access role needs no token.
	_, body, id := s.identity(&backend.User{Login: "boss", Role: "Admin"}, "", "")
	if id.Answer == nil || !id.Allowed || id.Scope != "all" || id.Source != "role" || !strings.Contains(body, "fullAccessRoles") {
		t.Errorf("admin: %s", body)
	}
}

// A Viewer refused for queries gets, from the identity route, the very
// refusal the query gets.
func TestIdentityRouteRefusesAsTheQueryDoes(t *testing.T) {
	s := newIdentitySite(t, identityJSON)
	u := &backend.User{Login: "root", Email: "root@uni.edu", Role: "Viewer"}
	for name, token := range map[string]string{
		"built-in account renamed root": s.grafanaToken(9, "zz9", "root", "root@uni.edu", "password"),
		"cookie session of a built-in":  s.grafanaToken(9, "zz9", "root", "root@uni.edu", ""),
		"token of another user":         s.grafanaToken(7, "fe1k2l", "alice", "alice@uni.edu", "ldap"),
		"no token":                      "",
		"a forged token":                s.grafanaToken(9, "zz9", "root", "", "ldap")[:40] + "x.y.z",
	} {
		want := s.queryRefusal(u, token)
		if want == "" {
			t.Fatalf("%s: the query is not refused", name)
		}
		status, body, id := s.identity(u, token, "")
		if status != 200 || id.Answer == nil || id.Allowed || id.Scope != "none" || id.Refusal != want {
			t.Errorf("%s: identity %d %s; the query's refusal: %q", name, status, body, want)
		}
		if !strings.Contains(id.Summary, want) {
			t.Errorf("%s: summary %q", name, id.Summary)
		}
	}
	// No user at all: the query's refusal too.
	_, _, id := s.identity(nil, "", "")
	if id.Answer == nil || id.Allowed || id.Refusal != errNoUser.Error() {
		t.Errorf("no user: %+v", id.Answer)
	}
}

// An org Admin may ask about a named user; what cannot be known without
// that user's token (role, sign-in method) is said, and each case is
// decided by the query path's rules.
func TestIdentityRouteNamedUser(t *testing.T) {
	s := newIdentitySite(t, identityJSON)
	admin := &backend.User{Login: "boss", Email: "boss@uni.edu", Role: "Admin"}
	// A Viewer or an Editor may not.
	for _, role := range []string{"Viewer", "Editor"} {
		u := &backend.User{Login: "v", Email: "v@uni.edu", Role: role}
		status, body, _ := s.identity(u, s.grafanaToken(3, "v3", "v", "v@uni.edu", "ldap"), "login=alice")
		if status != 403 || strings.Contains(body, "alice") {
			t.Errorf("%s asking about alice: %d %s", role, status, body)
		}
	}
	byMethod := func(id Identity) map[string]Answer {
		m := map[string]Answer{}
		for _, c := range id.Cases {
			m[c.AuthenticatedBy] = c
		}
		return m
	}
	// By id: userIdMap holds whatever the method.
	status, body, id := s.identity(admin, "", "userId=42&login=cara")
	cases := byMethod(id)
	if status != 200 || id.About != "named user" || len(id.Cases) < 3 || cases["password"].SlurmUser != "carol" || cases[""].SlurmUser != "carol" ||
		!strings.Contains(cases["password"].Rule, `userIdMap entry "user:42"`) || !strings.Contains(body, "does not know their org role") {
		t.Errorf("by id: %d %s", status, body)
	}
	if id.Answer != nil || id.Role != "" {
		t.Errorf("a named user's answer names a role or a decision of its own: %s", body)
	}
	// By login alone: a trusted sign-in maps the login; Grafana's own login
	// is refused with the query path's words; the missing id is said.
	status, body, id = s.identity(admin, "", "login=alice&email=alice%40uni.edu")
	cases = byMethod(id)
	want := s.queryRefusal(&backend.User{Login: "alice", Email: "alice@uni.edu", Role: "Viewer"}, s.grafanaToken(77, "x", "alice", "alice@uni.edu", "password"))
	if status != 200 || cases["ldap"].SlurmUser != "alice" || strings.Join(cases["ldap"].PIAccounts, ",") != "chem" || cases["password"].Allowed ||
		!strings.Contains(body, "userIdMap is not evaluated") {
		t.Errorf("by login: %d %s", status, body)
	}
	// The refusal is the query's, the id the admin did not give left open.
	if r := cases["password"].Refusal; r == "" || strings.ReplaceAll(r, "user:<id>", "user:77") != want || strings.Contains(body, "user:0") {
		t.Errorf("by login, password: %q; the query's: %q", r, want)
	}
	// One method, as asked.
	_, body, id = s.identity(admin, "", "login=alice&authenticatedBy=oauth_github")
	if len(id.Cases) != 1 || id.Cases[0].AuthenticatedBy != "oauth_github" || id.Cases[0].SlurmUser != "alice" {
		t.Errorf("one method: %s", body)
	}
	// Everything is escaped; nonsense is refused.
	status, body, _ = s.identity(admin, "", "login="+url.QueryEscape(`<script>alert(1)</script>`))
	if status != 200 || strings.Contains(body, "<script>") {
		t.Errorf("escaping: %d %s", status, body)
	}
	for _, q := range []string{"userId=abc&login=x", "userId=-1&login=x", "email=a@b", "login=" + strings.Repeat("a", 300)} {
		if status, body, _ := s.identity(admin, "", q); status != 400 {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
}

// With identitySource unverifiedLogin the named user's answer needs no
// token, and says that the login is not verified.
func TestIdentityRouteUnverifiedLogin(t *testing.T) {
	s := newIdentitySite(t, `{"identitySource":"unverifiedLogin","userMapping":"emailLocalPart","fullAccessRoles":["Admin"]}`)
	_, body, id := s.identity(&backend.User{Login: "a1", Email: "alice@uni.edu", Role: "Viewer"}, "", "")
	if id.Answer == nil || id.SlurmUser != "alice" || id.Source != "userHeaders" || !strings.Contains(id.Rule, "not verified") {
		t.Errorf("self: %s", body)
	}
	_, body, id = s.identity(&backend.User{Login: "boss", Role: "Admin"}, "", "login=a1&email=bob%40uni.edu")
	if len(id.Cases) != 1 || id.Cases[0].SlurmUser != "bob" || !strings.Contains(id.Cases[0].Rule, "emailLocalPart") {
		t.Errorf("named: %s", body)
	}
}

// The identity answer's keys are those src/types.ts declares
// (IdentityAnswer, IdentityResponse): the editor reads what Go writes.
func TestIdentityRouteKeysMatchTheFrontend(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "types.ts"))
	if err != nil {
		t.Fatal(err)
	}
	tsKeys := func(iface string) []string {
		m := regexp.MustCompile(`(?s)export interface ` + iface + `\b[^{]*\{(.*?)\n\}`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("src/types.ts has no interface %s", iface)
		}
		var keys []string
		for _, k := range regexp.MustCompile(`(?m)^\s+(\w+)\??:`).FindAllSubmatch(m[1], -1) {
			keys = append(keys, string(k[1]))
		}
		sort.Strings(keys)
		return keys
	}
	goKeys := func(v any) []string {
		var keys []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				keys = append(keys, tag)
			}
		}
		sort.Strings(keys)
		return keys
	}
	if ts, g := tsKeys("IdentityAnswer"), goKeys(Answer{}); strings.Join(ts, ",") != strings.Join(g, ",") {
		t.Errorf("IdentityAnswer %v, Answer %v", ts, g)
	}
	if ts, g := tsKeys("IdentityResponse"), goKeys(Identity{}); strings.Join(ts, ",") != strings.Join(g, ",") {
		t.Errorf("IdentityResponse %v, Identity %v", ts, g)
	}
}
