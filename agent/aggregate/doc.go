// Package aggregate keeps the rolling aggregates the agent holds on the node
// for one job: a Series per sampled gauge (CPU cores in use, memory bytes,
// GPU utilisation, ...) and a Counter per cumulative kernel counter (CPU time,
// bytes read and written).
//
// # Series
//
// A Series summarises a gauge over the whole life of a job: the time-weighted
// average, the exact minimum and peak, quantiles such as p95, and the time
// spent above an activity threshold. Everything except the quantiles is exact
// (up to floating-point rounding of the sums).
//
// Quantiles come from a logarithmic histogram in the manner of DDSketch
// (Masson et al., VLDB 2019): a positive value v is counted in bucket
// i = ceil(log_γ v), which covers (γ^(i-1), γ^i], with γ = (1+α)/(1-α) and
// α = RelativeAccuracy = 1 % (γ ≈ 1.0202). A quantile is answered with the
// bucket's centre 2γ^i/(γ+1), clamped to [Min, Max], which is within α
// (relative) of every value in the bucket, and therefore of the true
// quantile. The true q-quantile is taken to be the sample of rank
// floor(q·(n-1)) (0-based) among the n accepted samples in ascending order
// (the "lower" quantile). Exact zeros have their own bucket and are answered
// exactly as 0; q = 0 returns the exact Min and q = 1 the exact Max.
//
// Quantiles are weighted by sample, not by time: each accepted Add counts
// once whatever its dt. With the agent's fixed sampling interval the two are
// the same; after a stall (one Add with a long dt) the stalled interval is
// not taken to have held the last value for quantiles, only for the average
// and the active time.
//
// # Memory
//
// A Series holds at most MaxBuckets (4096) non-empty buckets of 16 bytes
// each, so at most 64 KiB however long the job runs. The bucket count is
// bounded by the range of the values, not by their number: at γ ≈ 1.0202 one
// decade takes about 116 buckets, so the whole range this project meets, from
// 1e-4 (CPU cores) to 1e14 (bytes), takes about 2100 and the cap is never
// reached in practice. Should a series span more than MaxBuckets buckets
// (about 35 decades), the lowest buckets are collapsed into the next one up:
// counts are kept, quantiles falling into the collapsed range are
// over-estimated (but still clamped to [Min, Max]), and quantiles above it
// keep the 1 % bound.
//
// Add allocates only when it creates a bucket that did not exist before, so
// in steady state (values within a range already seen) it does not allocate.
//
// # Checkpoints
//
// Series and Counter have only exported fields and round-trip through
// encoding/json exactly (Go writes float64 in the shortest form that reads
// back to the same value), so a checkpoint file restores the same answers.
// Decoding a Series checks its invariants and fails with an error naming the
// bad field rather than restoring a corrupt sketch.
package aggregate
