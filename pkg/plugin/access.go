package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/jobsight/jobsight/pkg/models"
)

// Viewer is who a request acts for, as far as Jobsight's access rules go.
//
//   - Full: the Grafana role is in fullAccessRoles (default Admin and
//     Editor), or the request comes from Grafana's alert engine: every job
//     is visible and aggregates name users.
//   - Otherwise the Grafana user is mapped to a Slurm user (userMapping,
//     userMap) and sees that user's jobs, plus every job of the accounts
//     it is PI of (accountPIs). Aggregates name only the viewer; other
//     users are pseudonyms.
type Viewer struct {
	Full bool
	// Alert is true for a query from Grafana's alert engine.
	Alert bool
	// Login is the Grafana login (for messages and logs).
	Login string
	// User is the Slurm user of a restricted viewer.
	User string
	// Accounts are the accounts a restricted viewer is PI of.
	Accounts []string
}

// errNoUser: a request without a Grafana user that is not from the alert
// engine is refused.
var errNoUser = errors.New("the request carries no Grafana user: Jobsight answers only signed-in users and Grafana's alert engine")

// viewerFor resolves the Viewer of a request. headers are the request's
// headers (QueryData's Headers; CallResource's, flattened).
func viewerFor(s *models.Settings, u *backend.User, headers map[string]string) (Viewer, error) {
	if u == nil {
		// Grafana's alert engine marks its queries; a browser's request
		// always carries its signed-in user, so it never gets here.
		if strings.EqualFold(headers[backend.FromAlertHeaderName], "true") {
			return Viewer{Full: true, Alert: true, Login: "alert engine"}, nil
		}
		return Viewer{}, errNoUser
	}
	if u.Login == "" && u.Email == "" {
		// An identity without a name (an anonymous visitor) is never
		// the alert engine, whatever headers it sends.
		return Viewer{}, errors.New("the request's Grafana user has no login: Jobsight answers signed-in users only")
	}
	v := Viewer{Login: u.Login, Alert: strings.EqualFold(headers[backend.FromAlertHeaderName], "true")}
	for _, r := range s.FullAccessRoles {
		if strings.EqualFold(r, u.Role) {
			v.Full = true
			return v, nil
		}
	}
	v.User = slurmUser(s, u)
	if v.User == "" {
		return Viewer{}, fmt.Errorf("your Grafana user %q has no Slurm user (userMapping %s): ask an admin to map it", u.Login, s.UserMapping)
	}
	for account, pis := range s.AccountPIs {
		for _, pi := range pis {
			if pi == v.User {
				v.Accounts = append(v.Accounts, account)
			}
		}
	}
	sort.Strings(v.Accounts)
	return v, nil
}

// slurmUser maps a Grafana user to a Slurm user name ("" when none).
func slurmUser(s *models.Settings, u *backend.User) string {
	if m, ok := s.UserMap[u.Login]; ok {
		return m
	}
	switch s.UserMapping {
	case models.UserMappingEmail:
		return u.Email
	case models.UserMappingEmailLocalPart:
		local, _, ok := strings.Cut(u.Email, "@")
		if !ok {
			return ""
		}
		return local
	default:
		return u.Login
	}
}

// esVisibility is the job-index clause limiting a restricted viewer to
// their jobs (nil for Full).
func (v Viewer) esVisibility() map[string]any {
	if v.Full {
		return nil
	}
	clauses := []any{esTerm("user", v.User)}
	if len(v.Accounts) > 0 {
		clauses = append(clauses, esTerms("account", v.Accounts))
	}
	return esShould(clauses...)
}

// canSee says whether the viewer may see a job of user in account.
func (v Viewer) canSee(user, account string) bool {
	if v.Full {
		return true
	}
	if user == v.User {
		return true
	}
	for _, a := range v.Accounts {
		if a == account {
			return true
		}
	}
	return false
}

// shownUser is how a user is named to this viewer in aggregates: as is
// for Full viewers and for the viewer themself, otherwise as a stable
// pseudonym ("user-3f2a9c") that does not reveal the name.
func (v Viewer) shownUser(user string) string {
	if v.Full || user == v.User || user == "" {
		return user
	}
	h := sha256.Sum256([]byte("jobsight-user\x00" + v.User + "\x00" + user))
	return "user-" + hex.EncodeToString(h[:3])
}
