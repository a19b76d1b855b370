package notify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/mail"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// userPlaceholder is replaced by the user name in an address template.
const userPlaceholder = "{user}"

// optOutAddress in the mapping file opts a user out.
const optOutAddress = "-"

// maxListFile bounds the size of the opt-out and mapping files.
const maxListFile = 16 << 20

// ErrInvalidAddress is wrapped by errors about a recipient address that is
// not a plain, valid, ASCII address (for instance because a user name
// carries characters that would change the message's headers).
var ErrInvalidAddress = errors.New("invalid recipient address")

// hasControl reports whether s has a control character or a line or
// paragraph separator (anything that could end a header line).
func hasControl(s string) bool {
	for _, r := range s {
		if isBreaking(r) {
			return true
		}
	}
	return false
}

// isBreaking reports whether r must never reach a header: C0/C1 controls
// (CR, LF, TAB and NUL among them), DEL, and Unicode line separators.
func isBreaking(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// checkUser checks a user name taken from job metadata.
func checkUser(user string) error {
	switch {
	case user == "":
		return errors.New("empty user name")
	case len(user) > 256:
		return errors.New("user name longer than 256 bytes")
	case !utf8.ValidString(user) || hasControl(user):
		return errors.New("user name contains control characters or invalid UTF-8")
	}
	return nil
}

// checkAddrSpec checks a bare address (the part between angle brackets):
// ASCII printable, no white space, exactly what net/mail parses it as.
func checkAddrSpec(addr string) error {
	for i := 0; i < len(addr); i++ {
		if b := addr[i]; b <= ' ' || b >= 0x7f {
			return fmt.Errorf("%w: %q has a space, control or non-ASCII character", ErrInvalidAddress, addr)
		}
	}
	a, err := mail.ParseAddress("<" + addr + ">")
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrInvalidAddress, addr, err)
	}
	if a.Address != addr || a.Name != "" {
		return fmt.Errorf("%w: %q is not a plain address", ErrInvalidAddress, addr)
	}
	return nil
}

// addressFromTemplate substitutes the user into the template. The user
// name must not contain characters with a meaning in addresses, so that it
// can only ever make up (part of) the local part it is placed in.
func addressFromTemplate(tmpl, user string) (*mail.Address, error) {
	if err := checkUser(user); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAddress, err)
	}
	if strings.ContainsAny(user, " @<>()[],;:\\\"{}") {
		return nil, fmt.Errorf("%w: user name %q has characters not allowed in an address", ErrInvalidAddress, user)
	}
	addr := strings.ReplaceAll(tmpl, userPlaceholder, user)
	if err := checkAddrSpec(addr); err != nil {
		return nil, err
	}
	return &mail.Address{Address: addr}, nil
}

// watchedFile caches a parsed file and re-reads it when its identity,
// size or modification time changes.
type watchedFile[T any] struct {
	path      string
	missingOK bool
	parse     func(data []byte) (T, error)
	mu        sync.Mutex
	info      fs.FileInfo // nil: not read yet, or missing
	loaded    bool
	value     T
}

// get returns the file's current contents, re-reading it if it changed.
// A file that cannot be read or parsed is an error (the last good value is
// not used, so that an edit in progress never widens who gets mail).
func (w *watchedFile[T]) get() (T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	fi, err := os.Stat(w.path)
	if errors.Is(err, fs.ErrNotExist) && w.missingOK {
		w.info, w.loaded, w.value = nil, true, zero
		return zero, nil
	}
	if err != nil {
		w.loaded = false
		return zero, fmt.Errorf("%s: %w", w.path, err)
	}
	if w.loaded && w.info != nil && os.SameFile(fi, w.info) && fi.Size() == w.info.Size() && fi.ModTime().Equal(w.info.ModTime()) {
		return w.value, nil
	}
	data, err := readLimited(w.path, maxListFile)
	if err != nil {
		w.loaded = false
		return zero, err
	}
	v, err := w.parse(data)
	if err != nil {
		w.loaded = false
		return zero, fmt.Errorf("%s: %w", w.path, err)
	}
	w.info, w.loaded, w.value = fi, true, v
	return v, nil
}

// readLimited reads a whole file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+1))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return buf.Bytes(), nil
}

// forEachLine calls fn with each non-blank line, trimmed, comments
// removed, and its 1-based number. A comment starts with '#' at the start
// of a line or after white space (so "a#b@example.org" stays whole).
func forEachLine(data []byte, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for i := strings.IndexByte(line, '#'); i >= 0; {
			if i == 0 || line[i-1] == ' ' || line[i-1] == '\t' {
				line = line[:i]
				break
			}
			j := strings.IndexByte(line[i+1:], '#')
			if j < 0 {
				break
			}
			i += 1 + j
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	return nil
}

// parseOptOut parses the opt-out file: one user name a line.
func parseOptOut(data []byte) (map[string]bool, error) {
	users := map[string]bool{}
	err := forEachLine(data, func(n int, line string) error {
		if err := checkUser(line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		users[line] = true
		return nil
	})
	return users, err
}

// recipient is what the mapping file says about one user: an address, or
// nil for an opted-out user.
type recipient struct {
	addr *mail.Address
}

// parseMapping parses "user: address" lines. An address may carry a
// display name ("Alice <alice@example.org>"); "-" opts the user out.
func parseMapping(data []byte) (map[string]recipient, error) {
	m := map[string]recipient{}
	err := forEachLine(data, func(n int, line string) error {
		user, addr, ok := strings.Cut(line, ":")
		user, addr = strings.TrimSpace(user), strings.TrimSpace(addr)
		if !ok || addr == "" {
			return fmt.Errorf("line %d: want \"user: address\" (or \"user: -\" to opt out)", n)
		}
		if err := checkUser(user); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := m[user]; dup {
			return fmt.Errorf("line %d: user %q listed twice", n, user)
		}
		if addr == optOutAddress {
			m[user] = recipient{}
			return nil
		}
		if hasControl(addr) {
			return fmt.Errorf("line %d: %w: contains control characters", n, ErrInvalidAddress)
		}
		a, err := mail.ParseAddress(addr)
		if err != nil {
			return fmt.Errorf("line %d: %w: %w", n, ErrInvalidAddress, err)
		}
		if err := checkAddrSpec(a.Address); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		m[user] = recipient{addr: a}
		return nil
	})
	return m, err
}

// directory resolves users to addresses and opt-outs.
type directory struct {
	template string
	mapping  *watchedFile[map[string]recipient] // nil: none configured
	optOut   *watchedFile[map[string]bool]      // nil: none configured
}

// errNoAddress: neither the mapping file nor a template gives an address.
var errNoAddress = errors.New("no address for user")

// lookup says where the user's mail goes. optedOut is true for a user in
// the opt-out file or mapped to "-". An unknown user without a template is
// errNoAddress; a user whose address would be invalid wraps
// ErrInvalidAddress; failing to read a file is any other error.
func (d *directory) lookup(user string) (addr *mail.Address, optedOut bool, err error) {
	if err := checkUser(user); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalidAddress, err)
	}
	if d.optOut != nil {
		set, err := d.optOut.get()
		if err != nil {
			return nil, false, fmt.Errorf("opt-out file: %w", err)
		}
		if set[user] {
			return nil, true, nil
		}
	}
	if d.mapping != nil {
		m, err := d.mapping.get()
		if err != nil {
			return nil, false, fmt.Errorf("mapping file: %w", err)
		}
		if r, ok := m[user]; ok {
			if r.addr == nil {
				return nil, true, nil
			}
			return r.addr, false, nil
		}
	}
	if d.template == "" {
		return nil, false, errNoAddress
	}
	a, err := addressFromTemplate(d.template, user)
	return a, false, err
}
