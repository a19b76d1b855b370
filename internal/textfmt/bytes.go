package textfmt

import "fmt"

// Bytes renders a byte count with one binary unit for reports of sizes
// (answers, payloads): "512 B", "10.2 KiB", "78.8 MiB".
func Bytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
