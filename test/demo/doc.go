// Package demo holds the tests of the generated demo history
// (internal/demo, `jobsight-stack up --history`) that need the real
// servers and the real plugin: the job page of a generated job, whose
// screenshot is docs/job-page.png.
package demo
