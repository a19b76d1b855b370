package plugin

// DecodeJobs lets BenchmarkSearchDecode (package plugin_test) measure the
// plugin's own decoding of a search answer, decodeJobs, beside the
// candidate decoders.
var DecodeJobs = decodeJobs
