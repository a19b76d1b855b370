// Package analysis is Jobsight's post-job analysis: from a job's final
// document (jobmodel.Job) it computes efficiency figures, an efficiency
// class, the likely causes of waste found by deterministic rules, a
// right-sized request rendered as #SBATCH changes, what that request would
// have freed, and a short lesson per cause.
//
// The package is pure: Analyze reads nothing but its arguments, does no
// I/O and gives the same result for the same input. Every threshold, every
// rule and every lesson is configurable (Config, the "analysis" section of
// a site's configuration); Default gives the documented defaults.
//
// Missing data is never replaced by zero: a figure whose inputs are absent
// stays absent and the inputs are named in Analysis.MissingMetrics; a rule
// whose inputs are absent does not fire. docs/analysis.md describes the
// classes, every rule with its condition, default thresholds, confidence
// and configuration key, and the recommendation method.
package analysis
