package energy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// dcmiDell is `ipmitool dcmi power reading` as ipmitool 1.8 prints it.
const dcmiDell = `

    Instantaneous power reading:                   220 Watts
    Minimum during sampling period:                 84 Watts
    Maximum during sampling period:                452 Watts
    Average power reading over sample period:      217 Watts
    IPMI timestamp:                           Thu Jan  1 00:00:00 1970
    Sampling period:                          00000005 Seconds.
    Power reading state is:                   activated


`

func TestParseDCMIPowerReading(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		watts    float64
		err      string
	}{
		{"full", dcmiDell, 217, ""},
		{"instant only", "Instantaneous power reading: 305 Watts\n", 305, ""},
		{"no state line", "    Instantaneous power reading:   180 Watts\n    Average power reading over sample period:   175 Watts\n", 175, ""},
		{"deactivated", strings.Replace(dcmiDell, "activated", "deactivated", 1), 0, "deactivated"},
		{"no value", "    IPMI timestamp: Thu Jan  1 00:00:00 1970\n", 0, "no power value"},
		{"not watts", "Instantaneous power reading: 220 Amps\n", 0, "instantaneous power reading"},
		{"negative", "Instantaneous power reading: -5 Watts\n", 0, "non-negative"},
		{"implausible", "Instantaneous power reading: 900000 Watts\n", 0, "plausible"},
		{"empty", "", 0, "no power value"},
		{"error text", "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory\n", 0, "no power value"},
	}
	for _, c := range cases {
		got, err := ParseDCMIPowerReading([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want one saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got.Watts() != c.watts {
			t.Errorf("%s: %v W, %v; want %v W", c.name, got.Watts(), err, c.watts)
		}
	}
	p, _ := ParseDCMIPowerReading([]byte(dcmiDell))
	if p.MinWatts != 84 || p.MaxWatts != 452 || p.InstantWatts != 220 || p.SamplingSeconds != 5 {
		t.Errorf("parsed %+v", p)
	}
}

func FuzzParseDCMIPowerReading(f *testing.F) {
	f.Add(dcmiDell)
	f.Add("Instantaneous power reading: 1e3 Watts\nPower reading state is: activated\n")
	f.Add("Average power reading over sample period: NaN Watts\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseDCMIPowerReading([]byte(s))
		if err != nil {
			return
		}
		w := p.Watts()
		if math.IsNaN(w) || w < 0 || w > maxNodeWatts || (!p.HaveAvg && !p.HaveInstant) {
			t.Fatalf("accepted %q as %+v", s, p)
		}
	})
}

// A node without ipmitool (or a BMC) is tried a few times and then left
// alone: no error every interval.
func TestPowerMeterGivesUpQuietly(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]error{
		"no tool":     fmt.Errorf("ipmitool dcmi power reading: %w", exec.ErrNotFound),
		"no bmc":      errors.New("exit status 1: Could not open device at /dev/ipmi0"),
		"deactivated": nil,
	} {
		var calls atomic.Int32
		run := func(context.Context) ([]byte, error) {
			calls.Add(1)
			if fail == nil {
				return []byte("Instantaneous power reading: 0 Watts\nPower reading state is: deactivated\n"), nil
			}
			return nil, fail
		}
		p := NewPowerMeter(run, PowerOptions{Interval: time.Millisecond, Timeout: time.Second})
		p.Start()
		deadline := time.Now().Add(5 * time.Second)
		for p.Unavailable() == "" && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		p.Close()
		if p.Unavailable() == "" {
			t.Errorf("%s: never gave up", name)
		}
		if n := calls.Load(); n > 3 {
			t.Errorf("%s: %d tries, want at most 3", name, n)
		}
		if _, ok := p.Latest(time.Hour); ok {
			t.Errorf("%s: a reading from a node without one", name)
		}
	}
}

func TestPowerMeterLatestAndStaleness(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	fail := false
	p := NewPowerMeter(func(context.Context) ([]byte, error) {
		if fail {
			return nil, errors.New("BMC busy")
		}
		return []byte(dcmiDell), nil
	}, PowerOptions{Interval: time.Minute, Timeout: time.Second, Now: func() time.Time { return now }})
	if !p.ReadOnce(context.Background()) {
		t.Fatal("stopped after a good reading")
	}
	if w, ok := p.Latest(p.MaxAge()); !ok || w != 217 {
		t.Fatalf("latest = %v, %v", w, ok)
	}
	// Failures after a success keep the meter going; the reading ages out.
	fail = true
	for i := 0; i < 5; i++ {
		if !p.ReadOnce(context.Background()) {
			t.Fatal("gave up after having read")
		}
	}
	now = now.Add(4 * time.Minute)
	if _, ok := p.Latest(p.MaxAge()); ok {
		t.Error("a 4-minute-old reading stands for now")
	}
}
