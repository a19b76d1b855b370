package stack

import (
	"fmt"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
)

// TestUser is the unprivileged user the tests submit another user's jobs
// as (sbatch --uid=TestUser), and whom the Grafana-side tests sign in as a
// Viewer. Slurm 23.02 on refuses jobs of nobody ("Rejecting --uid as
// nobody"), so StartSlurm creates this system user (no home, no login
// shell) where it is missing.
const TestUser = "jobsight-test"

var testUserOnce struct {
	sync.Once
	uid, gid int
	err      error
}

// TestUserIDs returns TestUser's uid and gid, creating the user (as a
// system user, with useradd) the first time where it does not exist. It
// needs root to create it.
func TestUserIDs() (uid, gid int, err error) {
	o := &testUserOnce
	o.Do(func() {
		u, err := user.Lookup(TestUser)
		if err != nil {
			out, cerr := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
				"--shell", "/usr/sbin/nologin", "--user-group", TestUser).CombinedOutput()
			if cerr != nil {
				o.err = fmt.Errorf("creating the test user %s: %v: %s", TestUser, cerr, out)
				return
			}
			if u, err = user.Lookup(TestUser); err != nil {
				o.err = fmt.Errorf("looking up the test user %s: %w", TestUser, err)
				return
			}
		}
		o.uid, _ = strconv.Atoi(u.Uid)
		o.gid, _ = strconv.Atoi(u.Gid)
	})
	return o.uid, o.gid, o.err
}
