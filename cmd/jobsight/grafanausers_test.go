package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grafanaOrgUsers answers GET /api/org/users/search as Grafana 11/12 do
// (one page here: totalCount 3), only to the service-account token.
func grafanaOrgUsers(t *testing.T, token string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"extra":null,"message":"Invalid API key","messageId":"api-keys.invalid","statusCode":401,"traceID":""}`))
			return
		}
		if r.URL.Path != "/api/org/users/search" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"totalCount":3,"orgUsers":[
{"orgId":1,"userId":1,"uid":"ae3fk2n1lz9xca","email":"admin@localhost","name":"","avatarUrl":"/avatar/46d229b033af06a191ff2267bca9ae56","login":"admin","role":"Admin","lastSeenAt":"2026-11-28T10:02:49Z","lastSeenAtAge":"9 hours","isDisabled":false,"authLabels":null,"isExternallySynced":false,"isProvisioned":false},
{"orgId":1,"userId":42,"uid":"ae3fk2n1lz9xcb","email":"alice@example.org","name":"Alice","avatarUrl":"/avatar/1","login":"alice","role":"Viewer","lastSeenAt":"2026-11-28T10:02:49Z","lastSeenAtAge":"9 hours","isDisabled":false,"authLabels":null,"isExternallySynced":false,"isProvisioned":false},
{"orgId":1,"userId":43,"uid":"ae3fk2n1lz9xcc","email":"bob@example.org","name":"Bob","avatarUrl":"/avatar/2","login":"bob","role":"Viewer","lastSeenAt":"2026-11-28T10:02:49Z","lastSeenAtAge":"9 hours","isDisabled":false,"authLabels":["LDAP"],"isExternallySynced":true,"isProvisioned":false}
],"page":1,"perPage":500}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGrafanaUsersCommand(t *testing.T) {
	dir := t.TempDir()
	const token = "glsa_SECRETtoken0123456789_abcdef01"
	tokenFile := filepath.Join(dir, "grafana-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "passwd")
	if err := os.WriteFile(users, []byte("root:x:0:0::/root:/bin/sh\nalice:x:1001:1001::/home/alice:/bin/sh\nbob:x:1002:1002::/home/bob:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := grafanaOrgUsers(t, token)
	var out, errb bytes.Buffer
	rc := run([]string{"grafana-users", "--grafana-url", srv.URL, "--token-file", tokenFile, "--slurm-users", users}, &out, &errb)
	if rc != 0 { // admin has no Slurm user: reported, but role Admin needs no entry
		t.Fatalf("rc %d\nstdout %s\nstderr %s", rc, out.String(), errb.String())
	}
	var got struct {
		UserIDMap map[string]string `json:"userIdMap"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.UserIDMap) != 1 || got.UserIDMap["user:42"] != "alice" {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	if !strings.Contains(errb.String(), `unmatched user:1 login "admin"`) || !strings.Contains(errb.String(), "no entry needed") ||
		!strings.Contains(errb.String(), "LDAP 1") || !strings.Contains(errb.String(), "0 to review") {
		t.Errorf("stderr: %s", errb.String())
	}
	if strings.Contains(out.String()+errb.String(), token) {
		t.Error("the token was printed")
	}

	// With no full-access role, the unmatched admin is to review.
	out.Reset()
	errb.Reset()
	rc = run([]string{"grafana-users", "--grafana-url", srv.URL, "--token-file", tokenFile, "--slurm-users", users, "--full-access-roles", ""}, &out, &errb)
	if rc != exitReview || !strings.Contains(errb.String(), "1 to review") {
		t.Fatalf("rc %d stderr %s", rc, errb.String())
	}

	// A refused token: the error names the token file, not the token.
	if err := os.WriteFile(tokenFile, []byte("glsa_revoked_0000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	rc = run([]string{"grafana-users", "--grafana-url", srv.URL, "--token-file", tokenFile, "--slurm-users", users}, &out, &errb)
	if rc != 1 || !strings.Contains(errb.String(), "401") || !strings.Contains(errb.String(), tokenFile) || out.Len() != 0 {
		t.Fatalf("rc %d stdout %q stderr %q", rc, out.String(), errb.String())
	}
	if strings.Contains(errb.String(), "glsa_revoked") {
		t.Error("the token was printed")
	}

	// The token is never an argument, and a file others can read is refused.
	errb.Reset()
	if rc := run([]string{"grafana-users", "--grafana-url", srv.URL, "--token-file", tokenFile, token}, &out, &errb); rc != 2 {
		t.Errorf("a token argument: rc %d", rc)
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if rc := run([]string{"grafana-users", "--grafana-url", srv.URL, "--token-file", tokenFile, "--slurm-users", users}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "chmod 0600") {
		t.Errorf("a world-readable token file: rc %d, %s", rc, errb.String())
	}
}
