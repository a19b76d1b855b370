package textfmt

import "testing"

func TestPlural(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
	}{
		{Plural(1, "GPU"), "1 GPU"},
		{Plural(0, "GPU"), "0 GPUs"},
		{Plural(int64(12), "core"), "12 cores"},
		{Plural(-1, "job"), "-1 jobs"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
