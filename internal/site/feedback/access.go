package feedback

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jobsight/jobsight/internal/jobmodel"
)

// ErrForbidden says that the caller may not read a job's report.
var ErrForbidden = errors.New("not your job")

// Caller is who runs the command: the real uid, so that a setgid
// installation (reading the credentials through its group) still acts for
// the user who ran it.
type Caller struct {
	UID    uint32
	User   string
	Groups []string
}

// CurrentCaller looks up the user who ran the command: the real uid, and
// the process's real and supplementary groups (never the effective group a
// setgid installation adds, which every caller has).
func CurrentCaller() (Caller, error) {
	uid := os.Getuid()
	c := Caller{UID: uint32(uid)} // #nosec G115 -- the kernel's uid_t is 32 bits: Getuid is never negative nor above 2^32-1
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return c, fmt.Errorf("looking up uid %d: %w", uid, err)
	}
	c.User = u.Username
	gids, err := unix.Getgroups()
	if err != nil {
		return c, nil // no groups: only the admin-group rule is lost
	}
	gids = append(gids, os.Getgid())
	for _, gid := range gids {
		if gid == os.Getegid() && gid != os.Getgid() {
			continue
		}
		if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil && !slices.Contains(c.Groups, g.Name) {
			c.Groups = append(c.Groups, g.Name)
		}
	}
	return c, nil
}

// Allowed says whether c may read job's report: root, an admin (by name or
// group), the job's owner (by uid, or by name when the document has no
// uid), or a PI of the job's account. The error never says whose job it is.
func (a AccessConfig) Allowed(c Caller, job jobmodel.Job) error {
	switch {
	case c.UID == 0,
		c.User != "" && slices.Contains(a.Admins, c.User),
		slices.ContainsFunc(c.Groups, func(g string) bool { return slices.Contains(a.AdminGroups, g) }):
		return nil
	case job.UID != nil && *job.UID == c.UID:
		return nil
	case job.UID == nil && job.User != "" && job.User == c.User:
		return nil
	case job.Account != "" && c.User != "" && slices.Contains(a.PIs[job.Account], c.User):
		return nil
	}
	return fmt.Errorf("job %s: %w", job.DocID, ErrForbidden)
}
