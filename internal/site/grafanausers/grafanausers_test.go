package grafanausers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/pkg/models"
)

const token = "glsa_test0123456789abcdef_0a1b2c3d"

// orgUser is one entry as Grafana's GET /api/org/users/search answers it
// (every field of OrgUserDTO in Grafana 11/12, as JSON, not only those the
// code reads): a built-in account has no external-login record, so its
// authLabels is null.
func orgUser(id int64, login, email string, labels ...string) map[string]any {
	var l any
	if len(labels) > 0 {
		l = labels
	}
	return map[string]any{
		"orgId": 1, "userId": id, "uid": fmt.Sprintf("u%06dabcdef", id), "email": email, "name": strings.ToUpper(login),
		"avatarUrl": "/avatar/46d229b033af06a191ff2267bca9ae56", "login": login, "role": "Viewer",
		"lastSeenAt": "2026-11-20T11:02:49Z", "lastSeenAtAge": "8 days", "isDisabled": false,
		"authLabels": l, "isExternallySynced": len(labels) > 0, "isProvisioned": false,
	}
}

// grafana answers GET /api/org/users/search as Grafana does: paged by
// perpage and page (page 1 first), totalCount over all pages; 401 with
// Grafana's message for another token.
func grafana(t *testing.T, users []map[string]any, hidden int) (*httptest.Server, *[]string) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"extra":null,"message":"Invalid API key","messageId":"api-keys.invalid","statusCode":401,"traceID":""}`))
			return
		}
		if r.URL.Path != "/api/org/users/search" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		per, _ := strconv.Atoi(r.URL.Query().Get("perpage"))
		if per <= 0 {
			per = 1000
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page < 1 {
			page = 1
		}
		from, to := min((page-1)*per, len(users)), min(page*per, len(users))
		pageUsers := users[from:to]
		if hidden > 0 && page == 1 && len(pageUsers) > 0 {
			// Grafana drops hidden users after counting them.
			pageUsers = pageUsers[1:]
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"totalCount": len(users), "orgUsers": pageUsers, "page": page, "perPage": per})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func slurmUsers(t *testing.T, passwd string) *SlurmUsers {
	t.Helper()
	s, _, err := ReadSlurmUsers(strings.NewReader(passwd), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestUsersPagesWithTheBearerToken(t *testing.T) {
	var users []map[string]any
	for i := 1; i <= 7; i++ {
		users = append(users, orgUser(int64(i), fmt.Sprintf("user%d", i), fmt.Sprintf("user%d@example.org", i)))
	}
	srv, calls := grafana(t, users, 0)
	got, err := (&Client{BaseURL: srv.URL + "/", Token: token, PerPage: 3}).Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[6].UserID != 7 || got[6].UID != "u000007abcdef" || got[0].Login != "user1" {
		t.Fatalf("users: %+v", got)
	}
	want := []string{"/api/org/users/search?page=1&perpage=3", "/api/org/users/search?page=2&perpage=3", "/api/org/users/search?page=3&perpage=3"}
	if strings.Join(*calls, " ") != strings.Join(want, " ") {
		t.Fatalf("requests %v, want %v", *calls, want)
	}
}

func TestUsersShortPageFromHiddenUsers(t *testing.T) {
	var users []map[string]any
	for i := 1; i <= 4; i++ {
		users = append(users, orgUser(int64(i), fmt.Sprintf("user%d", i), ""))
	}
	srv, calls := grafana(t, users, 1)
	got, err := (&Client{BaseURL: srv.URL, Token: token, PerPage: 2}).Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(*calls) != 2 {
		t.Fatalf("got %d users in %d requests: %v", len(got), len(*calls), *calls)
	}
}

func TestUsersRefusedToken(t *testing.T) {
	srv, _ := grafana(t, []map[string]any{orgUser(1, "a", "")}, 0)
	_, err := (&Client{BaseURL: srv.URL, Token: "glsa_wrong"}).Users(context.Background())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err %v, want ErrUnauthorized", err)
	}
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"accessErrorId":"ACE1","message":"You'll need additional permissions to perform this action. Permissions needed: org.users:read","title":"Access denied"}`))
	}))
	defer forbidden.Close()
	_, err = (&Client{BaseURL: forbidden.URL, Token: token}).Users(context.Background())
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "org role Admin") {
		t.Fatalf("err %v", err)
	}
	for _, bad := range []string{"grafana.example.org", "ftp://x", "https://admin:pw@grafana.example.org"} {
		if _, err := (&Client{BaseURL: bad, Token: token}).Users(context.Background()); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

const passwd = `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
alice:x:1001:1001:Alice:/home/alice:/bin/bash
bob:x:1002:1002:Bob:/home/bob:/bin/bash
robert:x:1003:1003:Robert:/home/robert:/bin/bash
carol:x:1004:1004::/home/carol:/bin/bash
dave:x:1005:1005::/home/dave:/bin/bash
dave:x:50005:50005::/home/dave:/bin/bash
erin:x:1006:1006::/home/erin:/bin/bash
erin:x:1006:1006::/home/erin:/bin/bash
Frank:x:1007:1007::/home/frank:/bin/bash
admin:x:999:999::/:/usr/sbin/nologin
bad name:x:1010:1010::/:/bin/sh
zoë:x:1011:1011::/home/zoe:/bin/bash
`

func decode(t *testing.T, srvUsers []map[string]any) []User {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"orgUsers": srvUsers})
	var p searchPage
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.OrgUsers
}

func problems(res Result) map[string]Problem {
	m := map[string]Problem{}
	for _, p := range res.Problems {
		m[p.Key] = p
	}
	return m
}

func TestBuildMatchingRules(t *testing.T) {
	users := decode(t, []map[string]any{
		orgUser(1, "admin", "admin@localhost"),                 // uid 999: a system account
		orgUser(2, "alice", "alice@example.org"),               // login (and email agree)
		orgUser(3, "bob", "robert@example.org"),                // login and email disagree
		orgUser(4, "carol@example.org", "carol@example.org"),   // email-shaped login
		orgUser(5, "dave", ""),                                 // listed twice, two uids
		orgUser(6, "erin", "erin@elsewhere.com"),               // listed twice, same uid; other domain
		orgUser(7, "frank", "frank@gmail.com"),                 // differs in case
		orgUser(8, "mallory", "alice@example.org"),             // claims alice too
		orgUser(9, "ldapuser", "ldapuser@example.org", "LDAP"), // not built-in
		orgUser(10, "proxied", "proxied@example.org", "Auth Proxy"),
		orgUser(11, "zoë", ""),
	})
	users[0].IsDisabled = false
	dis := decode(t, []map[string]any{orgUser(12, "carol", "")})[0]
	dis.IsDisabled = true
	users = append(users, dis)
	res := Build(users, slurmUsers(t, passwd), Options{EmailDomains: []string{"Example.org"}})
	want := map[string]string{"user:4": "carol", "user:6": "erin", "user:11": "zoë"}
	// alice (user:2) and mallory's email (user:8) claim alice: neither gets it.
	if fmt.Sprint(res.Map) != fmt.Sprint(want) {
		t.Fatalf("map %v, want %v", res.Map, want)
	}
	p := problems(res)
	for key, kind := range map[string]string{"user:1": "unmatched", "user:2": "ambiguous", "user:3": "ambiguous", "user:5": "ambiguous", "user:7": "unmatched", "user:8": "ambiguous"} {
		if p[key].Kind != kind {
			t.Errorf("%s: %+v, want %s", key, p[key], kind)
		}
	}
	if !strings.Contains(p["user:5"].Reason, "1005, 50005") || !strings.Contains(p["user:7"].Reason, `"Frank"`) ||
		!strings.Contains(p["user:3"].Reason, `"bob"`) || !strings.Contains(p["user:8"].Reason, "user:2") {
		t.Errorf("reasons: %v", res.Problems)
	}
	if res.Skipped["LDAP"] != 1 || res.Skipped["Auth Proxy"] != 1 || res.Skipped["disabled"] != 1 || res.Selected != 9 {
		t.Errorf("skipped %v, selected %d", res.Skipped, res.Selected)
	}
	// Without the mail domain, emails say nothing.
	res = Build(users[:4], slurmUsers(t, passwd), Options{})
	if res.Map["user:2"] != "alice" || res.Map["user:3"] != "bob" || problems(res)["user:4"].Kind != "unmatched" {
		t.Errorf("login only: %v %v", res.Map, res.Problems)
	}
	// Auth-proxy accounts on request.
	res = Build(users, slurmUsers(t, "proxied\nldapuser\n"), Options{Include: []string{"auth proxy"}})
	if fmt.Sprint(res.Map) != "map[user:10:proxied]" {
		t.Errorf("--include 'Auth Proxy': %v", res.Map)
	}
}

func TestBuildEmailShapedLogin(t *testing.T) {
	users := decode(t, []map[string]any{orgUser(4, "carol@example.org", "carol@example.org")})
	res := Build(users, slurmUsers(t, passwd), Options{EmailDomains: []string{"example.org"}})
	if res.Map["user:4"] != "carol" || len(res.Problems) != 0 {
		t.Fatalf("%v %v", res.Map, res.Problems)
	}
}

func TestBuildKeepsTheCurrentMap(t *testing.T) {
	users := decode(t, []map[string]any{
		orgUser(2, "alice", ""),
		orgUser(3, "root2", ""), // renamed itself from bob to robert's name? now "robert"
		orgUser(4, "carol", ""),
	})
	users[1].Login = "robert"
	current := map[string]string{"user:2": "alice", "user:3": "bob", "user:99": "dave", "u000004abcdef": "carol"}
	res := Build(users, slurmUsers(t, passwd), Options{Current: current})
	want := map[string]string{"user:2": "alice", "user:3": "bob", "u000004abcdef": "carol"}
	if fmt.Sprint(res.Map) != fmt.Sprint(want) || res.Kept != 3 || res.Added != 0 {
		t.Fatalf("map %v kept %d added %d, want %v", res.Map, res.Kept, res.Added, want)
	}
	p := problems(res)
	if p["user:3"].Kind != "changed" || !strings.Contains(p["user:3"].Reason, `kept "bob"`) || p["user:99"].Kind != "dropped" {
		t.Fatalf("problems %v", res.Problems)
	}
	// A new account whose login names a Slurm user already in the map
	// gets nothing.
	users = append(users, decode(t, []map[string]any{orgUser(5, "bob", "")})...)
	res = Build(users, slurmUsers(t, passwd), Options{Current: current})
	if _, ok := res.Map["user:5"]; ok || problems(res)["user:5"].Kind != "ambiguous" {
		t.Fatalf("user:5: %v %v", res.Map, res.Problems)
	}
}

// Hostile names: the printed map is valid JSON holding exactly the names,
// whatever they contain, and every key passes the plugin's settings check.
func TestWriteMapEscapesAndThePluginAcceptsIt(t *testing.T) {
	names := []string{`al"ice`, `back\slash`, "tab\tname", "new\nline", "</script>", "zoë", "日本", "a b", "\u2028sep", "{\"x\":1}"}
	var lines []string
	var users []map[string]any
	for i, n := range names {
		lines = append(lines, n)
		users = append(users, orgUser(int64(100+i), n, ""))
	}
	// Names with whitespace or control characters are no Unix user names:
	// ReadSlurmUsers skips them, so they are unmatched, never printed raw.
	slurm, ignored, err := ReadSlurmUsers(strings.NewReader(strings.Join(lines, "\n")), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if ignored != 3 { // "tab\tname", "a b", "\u2028sep"; "new\nline" is two lines, two names
		t.Errorf("ignored %d lines, want 3", ignored)
	}
	res := Build(decode(t, users), slurm, Options{})
	var buf bytes.Buffer
	if err := WriteMap(&buf, res.Map); err != nil {
		t.Fatal(err)
	}
	var back struct {
		UserIDMap map[string]string `json:"userIdMap"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	if fmt.Sprint(back.UserIDMap) != fmt.Sprint(res.Map) || len(res.Map) != 5 {
		t.Fatalf("round trip %v != %v", back.UserIDMap, res.Map)
	}
	for _, raw := range []string{"\n    \"al\"ice", "</script>", "\u2028"} {
		if strings.Contains(buf.String(), raw) {
			t.Errorf("output holds %q unescaped:\n%s", raw, buf.String())
		}
	}
	for k, v := range back.UserIDMap {
		if p := models.UserIDMapKeyProblem(k); p != "" {
			t.Errorf("the plugin refuses key %q: %s", k, p)
		}
		if strings.TrimSpace(v) == "" {
			t.Errorf("empty value for %q", k)
		}
	}
	// And the printed object, as jsonData, decodes strictly into the
	// plugin's settings, whose validation finds nothing in userIdMap (other
	// settings, not given here, are refused for their own reasons).
	s, err := models.ParseJSONData(buf.Bytes())
	if err != nil {
		t.Fatalf("the plugin cannot decode the printed map: %v", err)
	}
	if len(s.UserIDMap) != len(res.Map) {
		t.Fatalf("settings hold %d entries, want %d", len(s.UserIDMap), len(res.Map))
	}
	if err := s.Validate(); err != nil {
		var errs []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		} else {
			errs = []error{err}
		}
		for _, e := range errs {
			var fe *models.FieldError
			if errors.As(e, &fe) && fe.Field == "userIdMap" {
				t.Errorf("the plugin refuses the printed map: %v", fe)
			}
		}
	}
	// Reported problems quote the names: no raw newline reaches a terminal.
	for _, p := range res.Problems {
		if strings.ContainsAny(p.String(), "\n\t\u2028") {
			t.Errorf("problem line holds a raw control character: %q", p.String())
		}
	}
}

func TestReadCurrent(t *testing.T) {
	for _, in := range []string{
		`{"userIdMap": {"user:2": "alice"}}`,
		`{"esUrl": "http://es:9200", "maxJobs": 100, "userIdMap": {"user:2": "alice"}, "trustedAuthMethods": ["ldap"]}`,
		`{"user:2": "alice"}`,
	} {
		m, err := ReadCurrent([]byte(in))
		if err != nil || m["user:2"] != "alice" || len(m) != 1 {
			t.Errorf("%s: %v %v", in, m, err)
		}
	}
	if _, err := ReadCurrent([]byte(`"userIdMap": {}`)); err == nil {
		t.Error("a bare fragment accepted")
	}
}
