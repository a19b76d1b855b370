// Package notify mails job reports to the jobs' owners.
//
// The analysis hands each finished job's rendered report to
// Notifier.Enqueue, which decides whether it is to be mailed at all
// (gpu_jobs_only, classes, opt-out, an address for the user) and stores it
// durably in a spool directory, one file per report. Notifier.Flush, called
// periodically (Notifier.Run does that), sends each user one digest per
// batch window over SMTP (STARTTLS or implicit TLS, AUTH PLAIN with a
// password read from a file) as a multipart/alternative message with the
// reports' text and HTML renderings. Failed deliveries keep their reports
// for the next Flush; see README.md for the details.
package notify
