// Package grafana holds hourglass's Grafana files (no Go code): the
// provisioning of its two data sources and of its dashboards, the
// dashboard of hourglass's own /metrics and the example dashboard of the
// load generator's data. Its test checks that every file parses and that
// every panel's query names a metric the load generator writes or
// hourglass exports. docs/grafana.md says how to use them.
package grafana
