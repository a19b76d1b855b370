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
		{Plural(2, "process"), "2 processes"},
		{Plural(1, "process"), "1 process"},
		{Plural(3, "batch"), "3 batches"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 10444: "10.2 KiB", 82627297: "78.8 MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
