package feedback

import (
	"errors"
	"strings"
	"testing"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

func TestAccess(t *testing.T) {
	t.Parallel()
	acc := AccessConfig{Admins: []string{"ops"}, AdminGroups: []string{"hpc-admin"}, PIs: map[string][]string{"physics": {"prof"}}}
	job := jobmodel.Job{DocID: "hpc1:42", User: "alice", UID: jobmodel.Ptr[uint32](1001), Account: "physics"}
	for _, tc := range []struct {
		name string
		c    Caller
		ok   bool
	}{
		{"owner", Caller{UID: 1001, User: "alice"}, true},
		{"root", Caller{UID: 0}, true},
		{"admin by name", Caller{UID: 5, User: "ops"}, true},
		{"admin by group", Caller{UID: 6, User: "x", Groups: []string{"users", "hpc-admin"}}, true},
		{"PI of the account", Caller{UID: 7, User: "prof"}, true},
		{"another user", Caller{UID: 1002, User: "bob"}, false},
		// The name alone does not win over a uid that says otherwise.
		{"same name, other uid", Caller{UID: 1003, User: "alice"}, false},
		{"PI of another account", Caller{UID: 8, User: "prof2"}, false},
		{"empty name", Caller{UID: 9}, false},
	} {
		err := acc.Allowed(tc.c, job)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ErrForbidden) || strings.Contains(err.Error(), "alice")) {
			t.Errorf("%s: error %q must be ErrForbidden and not name the owner", tc.name, err)
		}
	}
	// A document without a uid falls back to the user name.
	noUID := jobmodel.Job{DocID: "hpc1:43", User: "alice"}
	if acc.Allowed(Caller{UID: 1001, User: "alice"}, noUID) != nil || acc.Allowed(Caller{UID: 1002, User: "bob"}, noUID) == nil {
		t.Error("name fallback wrong")
	}
	// A job without an account: PIs do not match the empty account.
	acc.PIs[""] = []string{"prof"}
	if acc.Allowed(Caller{UID: 7, User: "prof"}, jobmodel.Job{DocID: "c:1", UID: jobmodel.Ptr[uint32](1)}) == nil {
		t.Error("PI of the empty account read a job without account")
	}
}
