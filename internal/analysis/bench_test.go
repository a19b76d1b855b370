package analysis

import "testing"

// BenchmarkAnalyze is one analysis of a 4-GPU job document (what the
// job's first node pays once at job end, and the site command per report).
func BenchmarkAnalyze(b *testing.B) {
	job := loadFixture(b, "gpu_four_held_one_used.json")
	cfg := Default()
	b.ReportAllocs()
	for b.Loop() {
		if a := Analyze(Input{Job: job}, cfg); a.Class == "" {
			b.Fatal("no class")
		}
	}
}
