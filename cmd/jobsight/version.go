package main

// version is the site command's version, set at build time (make site,
// make packages: -X main.version=<the package version>, which the
// VERSION file makes; docs/packages.md).
var version = "dev"
