// Package energy reads what a node consumes: CPU package and DRAM energy
// from RAPL (powercap sysfs), the node's busy CPU time from /proc/stat
// (to split that energy between jobs), and the node's wall power from the
// BMC through IPMI DCMI. A Meter bundles them and fills a Reading once per
// sampling pass; a source the node does not offer (no RAPL, energy_uj
// readable only by root, no ipmitool or BMC) stays missing — never a zero.
//
// How a job's share is computed from these readings is in docs/energy.md.
package energy
