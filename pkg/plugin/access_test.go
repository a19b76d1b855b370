package plugin

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
)

func settingsFor(t *testing.T, jsonData string) *models.Settings {
	t.Helper()
	s, err := models.ParseJSONData([]byte(jsonData))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestViewerFor(t *testing.T) {
	s := settingsFor(t, `{"userMapping":"emailLocalPart","userMap":{"ops":"root"},"accountPIs":{"physics":["alice"],"chem":["alice","bob"]},"fullAccessRoles":["Admin"]}`)
	alert := map[string]string{backend.FromAlertHeaderName: "true"}
	cases := []struct {
		name    string
		user    *backend.User
		headers map[string]string
		want    Viewer
		err     string
	}{
		{"admin sees all", &backend.User{Login: "boss", Role: "Admin"}, nil, Viewer{Full: true, Login: "boss"}, ""},
		{"editor is restricted here", &backend.User{Login: "ed", Email: "ed@x.org", Role: "Editor"}, nil, Viewer{Login: "ed", User: "ed"}, ""},
		{"viewer by email", &backend.User{Login: "a1", Email: "alice@uni.edu", Role: "Viewer"}, nil,
			Viewer{Login: "a1", User: "alice", Accounts: []string{"chem", "physics"}}, ""},
		{"user map wins", &backend.User{Login: "ops", Email: "ops@x", Role: "Viewer"}, nil, Viewer{Login: "ops", User: "root"}, ""},
		{"no email, no mapping", &backend.User{Login: "x", Role: "Viewer"}, nil, Viewer{}, "has no Slurm user"},
		{"alert engine", nil, alert, Viewer{Full: true, Alert: true, Login: "alert engine"}, ""},
		{"no user, no alert header", nil, nil, Viewer{}, "no Grafana user"},
		// An anonymous identity (no login, no email) is not the alert
		// engine, even with its header.
		{"anonymous with alert header", &backend.User{Role: "Viewer"}, alert, Viewer{}, "has no login"},
		{"anonymous admin with alert header", &backend.User{Role: "Admin"}, alert, Viewer{}, "has no login"},
		// A signed-in viewer cannot become the alert engine by a header.
		{"viewer with alert header", &backend.User{Login: "b", Email: "bob@x", Role: "Viewer"}, alert,
			Viewer{Login: "b", User: "bob", Alert: true, Accounts: []string{"chem"}}, ""},
	}
	for _, c := range cases {
		got, err := viewerFor(s, c.user, c.headers)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.Full != c.want.Full || got.User != c.want.User || got.Alert != c.want.Alert || strings.Join(got.Accounts, ",") != strings.Join(c.want.Accounts, ",") {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestDefaultRolesGiveEditorsFullAccess(t *testing.T) {
	s := settingsFor(t, `{}`)
	v, err := viewerFor(s, &backend.User{Login: "ed", Role: "Editor"}, nil)
	if err != nil || !v.Full {
		t.Errorf("editor with default roles: %+v %v", v, err)
	}
	v, err = viewerFor(s, &backend.User{Login: "vi", Role: "Viewer"}, nil)
	if err != nil || v.Full || v.User != "vi" {
		t.Errorf("viewer with default login mapping: %+v %v", v, err)
	}
}

func TestPseudonymsHideOtherUsers(t *testing.T) {
	v := Viewer{User: "alice", Accounts: []string{"physics"}}
	if v.shownUser("alice") != "alice" {
		t.Error("the viewer's own name must show")
	}
	p := v.shownUser("bob")
	if p == "bob" || !strings.HasPrefix(p, "user-") || p != v.shownUser("bob") || p == v.shownUser("carol") {
		t.Errorf("pseudonym of bob: %q", p)
	}
	if (Viewer{User: "dave"}).shownUser("bob") == p {
		t.Error("pseudonyms must differ between viewers")
	}
	if (Viewer{Full: true}).shownUser("bob") != "bob" {
		t.Error("full viewers see names")
	}
	if !v.canSee("bob", "physics") || v.canSee("bob", "chem") || !v.canSee("alice", "chem") {
		t.Error("canSee")
	}
}
