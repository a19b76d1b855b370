package config

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// maxSecret bounds a credential file.
const maxSecret = 64 << 10

// ReadSecret reads a credential from a file, trimming one trailing newline;
// an empty path is no credential. The error names the option and the file,
// never the content. Every password and token a product sends to a store
// is read here.
//
// The file must be private: not readable or writable by every user (0600,
// or 0640 for the group of a setgid command that needs it), and owned by
// root or by the user the program runs as (anyone else could replace it
// and redirect or capture what the program sends). A file that is not is
// refused with an error saying how to fix it.
func ReadSecret(option, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	if perm := fi.Mode().Perm(); perm&0o007 != 0 {
		return "", fmt.Errorf("%s: %s is open to every user (mode %04o): chmod 0600 it (0640 for a group that must read it)", option, path, perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s: %s belongs to uid %d, neither root nor this program's user (uid %d), who could replace it: chown it", option, path, st.Uid, os.Geteuid())
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", option, err)
	}
	if len(b) > maxSecret {
		return "", fmt.Errorf("%s: %s is over %d KiB: not a credential", option, path, maxSecret>>10)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
