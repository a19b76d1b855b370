// Package schema checks the shipped Grafana files strictly, without a
// Grafana server (Grafana's server is AGPL and not used here).
//
// Dashboards (dashboards/*.json) are decoded with UnmarshalJSONStrict into
// the dashboard types of the Apache-2.0 Grafana foundation SDK
// (github.com/grafana/grafana-foundation-sdk/go, v0.0.22: the dashboard,
// panel and query schemas of current Grafana). An unexpected key anywhere
// the SDK has a schema is a problem, and so is a value of the wrong JSON
// type. Panel options and fieldConfig.defaults.custom are decoded per panel
// type with the SDK's panel schemas; options a panel leaves out are taken
// from the SDK's defaults first (NewOptions, NewFieldConfig), as Grafana
// takes them from the panel plugin. On top of the SDK the checks are:
//
//   - panel types: only core, non-Angular panels that Grafana 11, 12 and 13
//     all ship and that the SDK has a schema for (PanelTypes);
//   - fieldConfig (decoded loosely by the SDK's Panel) strictly, including
//     every override property (custom.* against the panel's custom schema);
//   - targets: every target names its datasource, of type
//     jobsight-slurm-datasource (decoded with unknown keys refused into
//     models.Query plus Grafana's own target keys, then, with the template
//     variables expanded as the frontend does, models.Query.Validate) or
//     prometheus (the SDK's prometheus query, strictly); query variables
//     likewise;
//   - datasources: every target, panel, variable and annotation names its
//     datasource through a datasource template variable of the same plugin
//     type (${datasource} for Jobsight), and every datasource variable
//     defaults to the uid provisioned for that type
//     (provisioning/datasources);
//   - data links (fieldConfig links, panel links), which the SDK types as
//     dashboard links, strictly as Grafana's data links;
//   - transformation ids and override matcher ids against Grafana's;
//   - template variables: every $var, ${var}, ${var:fmt} and [[var]] in
//     targets, titles, descriptions, links, data links, text panel content
//     and variable queries is a variable of the dashboard or a Grafana
//     built-in (__interval, __from, __data, ...); dashboard links of the form
//     /d/<uid> name a shipped dashboard.
//
// Provisioning files are decoded with yaml.v3 KnownFields(true) into structs
// written from Grafana's documented file provisioning formats (datasources,
// dashboard providers, alerting: rule groups, contact points, notification
// policies, templates, mute timings). The Jobsight datasource's jsonData
// must be accepted by models.ParseJSONData (which refuses unknown keys) and
// Settings.Validate once the $__env{...} placeholders hold plausible values;
// its secureJsonData keys must be ones the plugin reads. An alert rule's
// query on a provisioned datasource must name its uid and be a valid query
// for it (Jobsight: strict and Validate); its server-side expressions must
// decode strictly into the SDK's expression types (reduce, threshold,
// math, resample, classic_conditions) and refer to refIds of the rule; its
// condition must be one of its refIds; noDataState and execErrState must be
// states Grafana 10 to 13 all accept. A $ where Grafana's alerting
// provisioning expands environment variables (labels, titles, contact point
// settings; not annotations) must be a documented placeholder or $$.
//
// Not checked: transformation options (the SDK has no schema for them),
// settings of contact point integrations other than email, and the
// core panels alertlist, flamegraph and traces, which the SDK has no
// schema for and which are therefore refused until this checker has one.
//
// Every check is a function from file name and bytes to a list of
// problems, one per fault, naming the file, the panel (title and type) or
// rule, and the field.
package schema
