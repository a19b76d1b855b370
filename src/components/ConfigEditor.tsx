import React from 'react';
import { SelectableValue } from '@grafana/data';
import { FieldSet, InlineField, InlineSwitch, Input, MultiSelect, SecretInput, Select, TextArea } from '@grafana/ui';

import {
  DEFAULTS,
  GRAFANA_ROLES,
  GrafanaRole,
  IDENTITY_SOURCES,
  IdentitySource,
  toOptions,
  USER_MAPPINGS,
  UserMapping,
} from '../types';
import { AllocationsEditor } from './config/AllocationsEditor';
import { CapacityEditor } from './config/CapacityEditor';
import {
  ConfigEditorProps,
  useJsonDataField,
  useJsonDataNumber,
  useJsonDataSetter,
  useSecureField,
} from './config/fields';
import { listValue, MapEditor, textValue } from './config/MapEditor';
import { NumberInput } from './NumberInput';

export type { ConfigEditorProps } from './config/fields';

const LABEL_WIDTH = 26;
const INPUT_WIDTH = 48;

/**
 * The Jobsight datasource settings (pkg/models/settings.go): where
 * Elasticsearch (job documents) and Prometheus (job series) are and how to
 * authenticate, who sees what, caps, allocations and partition sizes.
 * Passwords and tokens go to secureJsonData, which Grafana encrypts and never
 * sends back: the page only knows whether one is configured. Each field is
 * tied to its setting by a hook (config/fields.ts).
 */
export function ConfigEditor(props: ConfigEditorProps) {
  const { options, onOptionsChange } = props;
  const jsonData = options.jsonData;
  const setJson = useJsonDataSetter(props);

  const esUrl = useJsonDataField(props, 'elasticsearchUrl');
  const esUser = useJsonDataField(props, 'elasticsearchUser');
  const esPassword = useSecureField(props, 'elasticsearchPassword');
  const esJobIndex = useJsonDataField(props, 'elasticsearchJobIndex');
  const esNodeIndex = useJsonDataField(props, 'elasticsearchNodeIndex');
  const promUrl = useJsonDataField(props, 'prometheusUrl');
  const promUser = useJsonDataField(props, 'prometheusUser');
  const promPassword = useSecureField(props, 'prometheusPassword');
  const promToken = useSecureField(props, 'prometheusBearerToken');
  const promTenant = useJsonDataField(props, 'prometheusTenant');
  const promTenantHeader = useJsonDataField(props, 'prometheusTenantHeader');
  const allocationsToken = useSecureField(props, 'allocationsToken');
  const tlsCaCert = useJsonDataField(props, 'tlsCaCert');
  const esCaCert = useJsonDataField(props, 'elasticsearchTlsCaCert');
  const promCaCert = useJsonDataField(props, 'prometheusTlsCaCert');
  const allocationsCaCert = useJsonDataField(props, 'allocationsTlsCaCert');
  const grafanaCaCert = useJsonDataField(props, 'grafanaTlsCaCert');
  const clusterFilter = useJsonDataField(props, 'clusterFilter');
  const timeout = useJsonDataNumber(props, 'timeoutSeconds');
  const maxJobs = useJsonDataNumber(props, 'maxJobs');
  const maxSeries = useJsonDataNumber(props, 'maxSeries');
  const silentAfter = useJsonDataNumber(props, 'silentAfterMinutes');
  const grafanaUrl = useJsonDataField(props, 'grafanaUrl');
  const allocationsUrl = useJsonDataField(props, 'allocationsUrl');
  const jobPageUrl = useJsonDataField(props, 'jobPageUrl');

  return (
    <>
      <FieldSet label="Elasticsearch (job documents)">
        <InlineField
          label="URL"
          labelWidth={LABEL_WIDTH}
          htmlFor="es-url"
          tooltip="Base URL of the Elasticsearch HTTP API (8, or 7.14 and later; not OpenSearch)"
          required
        >
          <Input
            id="es-url"
            width={INPUT_WIDTH}
            placeholder="http://localhost:9200"
            {...esUrl}
          />
        </InlineField>
        <InlineField
          label="User"
          labelWidth={LABEL_WIDTH}
          htmlFor="es-user"
          tooltip="Basic authentication user; empty for none"
        >
          <Input
            id="es-user"
            width={INPUT_WIDTH}
            {...esUser}
          />
        </InlineField>
        <InlineField label="Password" labelWidth={LABEL_WIDTH} htmlFor="es-password">
          <SecretInput id="es-password" width={INPUT_WIDTH} {...esPassword} />
        </InlineField>
        <InlineField
          label="Job index"
          labelWidth={LABEL_WIDTH}
          htmlFor="es-job-index"
          tooltip="Index with one document per job"
        >
          <Input
            id="es-job-index"
            width={INPUT_WIDTH}
            placeholder={DEFAULTS.elasticsearchJobIndex}
            {...esJobIndex}
          />
        </InlineField>
        <InlineField
          label="Node index"
          labelWidth={LABEL_WIDTH}
          htmlFor="es-node-index"
          tooltip="Index with one document per job per node"
        >
          <Input
            id="es-node-index"
            width={INPUT_WIDTH}
            placeholder={DEFAULTS.elasticsearchNodeIndex}
            {...esNodeIndex}
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Prometheus (job series)">
        <InlineField
          label="URL"
          labelWidth={LABEL_WIDTH}
          htmlFor="prom-url"
          required
          tooltip="Base URL of the Prometheus query API (for Mimir include its /prometheus prefix)"
        >
          <Input
            id="prom-url"
            width={INPUT_WIDTH}
            placeholder="http://localhost:9090"
            {...promUrl}
          />
        </InlineField>
        <InlineField
          label="User"
          labelWidth={LABEL_WIDTH}
          htmlFor="prom-user"
          tooltip="Basic authentication user; empty for none or a bearer token"
        >
          <Input
            id="prom-user"
            width={INPUT_WIDTH}
            {...promUser}
          />
        </InlineField>
        <InlineField label="Password" labelWidth={LABEL_WIDTH} htmlFor="prom-password">
          <SecretInput id="prom-password" width={INPUT_WIDTH} {...promPassword} />
        </InlineField>
        <InlineField
          label="Bearer token"
          labelWidth={LABEL_WIDTH}
          htmlFor="prom-token"
          tooltip="Instead of user and password, not with them"
        >
          <SecretInput id="prom-token" width={INPUT_WIDTH} {...promToken} />
        </InlineField>
        <InlineField
          label="Tenant"
          labelWidth={LABEL_WIDTH}
          htmlFor="prom-tenant"
          tooltip="Tenant of a multi-tenant store (Mimir, Thanos), sent on every request; empty for none"
        >
          <Input
            id="prom-tenant"
            width={INPUT_WIDTH}
            {...promTenant}
          />
        </InlineField>
        <InlineField
          label="Tenant header"
          labelWidth={LABEL_WIDTH}
          htmlFor="prom-tenant-header"
          tooltip="The header carrying the tenant (Thanos: THANOS-TENANT unless told otherwise)"
        >
          <Input
            id="prom-tenant-header"
            width={INPUT_WIDTH}
            placeholder={DEFAULTS.prometheusTenantHeader}
            {...promTenantHeader}
          />
        </InlineField>
      </FieldSet>

      {/* TLS trust (docs/datasource.md, "TLS trust"): each bundle is added to the system's CAs, never instead of them. */}
      <FieldSet label="TLS">
        <InlineField
          label="CA certificate"
          labelWidth={LABEL_WIDTH}
          htmlFor="tls-ca"
          tooltip="PEM bundle of a private CA, trusted for Elasticsearch, Prometheus and the allocations URL in addition to the system's CAs (not for Grafana's signing keys: Grafana keys CA below)"
        >
          <TextArea
            id="tls-ca"
            cols={INPUT_WIDTH}
            rows={4}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...tlsCaCert}
          />
        </InlineField>
        <InlineField
          label="Elasticsearch CA"
          labelWidth={LABEL_WIDTH}
          htmlFor="tls-ca-es"
          tooltip="PEM CA bundle trusted for Elasticsearch only, in addition to the system's CAs and the CA certificate above"
        >
          <TextArea
            id="tls-ca-es"
            cols={INPUT_WIDTH}
            rows={4}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...esCaCert}
          />
        </InlineField>
        <InlineField
          label="Prometheus CA"
          labelWidth={LABEL_WIDTH}
          htmlFor="tls-ca-prom"
          tooltip="PEM CA bundle trusted for Prometheus only, in addition to the system's CAs and the CA certificate above"
        >
          <TextArea
            id="tls-ca-prom"
            cols={INPUT_WIDTH}
            rows={4}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...promCaCert}
          />
        </InlineField>
        <InlineField
          label="Allocations URL CA"
          labelWidth={LABEL_WIDTH}
          htmlFor="tls-ca-allocations"
          tooltip="PEM CA bundle trusted for the allocations URL (the cluster-state collector) only, in addition to the system's CAs and the CA certificate above"
        >
          <TextArea
            id="tls-ca-allocations"
            cols={INPUT_WIDTH}
            rows={4}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...allocationsCaCert}
          />
        </InlineField>
        <InlineField
          label="Grafana keys CA"
          labelWidth={LABEL_WIDTH}
          htmlFor="tls-ca-grafana"
          tooltip="PEM CA bundle trusted for fetching Grafana's signing keys (Grafana URL, else root_url), in addition to the system's CAs; the CA certificate above is not used there"
        >
          <TextArea
            id="tls-ca-grafana"
            cols={INPUT_WIDTH}
            rows={4}
            placeholder="-----BEGIN CERTIFICATE-----"
            {...grafanaCaCert}
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Scope and limits">
        <InlineField
          label="Cluster filter"
          labelWidth={LABEL_WIDTH}
          htmlFor="cluster-filter"
          tooltip="Only jobs of this Slurm cluster; empty for all"
        >
          <Input
            id="cluster-filter"
            width={INPUT_WIDTH}
            {...clusterFilter}
          />
        </InlineField>
        <InlineField
          label="Timeout (s)"
          labelWidth={LABEL_WIDTH}
          htmlFor="timeout"
          tooltip="Per request to Elasticsearch or Prometheus, 1 to 300"
        >
          <NumberInput
            id="timeout"
            width={INPUT_WIDTH}
            min={1}
            max={300}
            placeholder={String(DEFAULTS.timeoutSeconds)}
            {...timeout}
          />
        </InlineField>
        <InlineField
          label="Max jobs"
          labelWidth={LABEL_WIDTH}
          htmlFor="max-jobs"
          tooltip="Jobs one panel reads; more are truncated with a notice. 1 to 100000"
        >
          <NumberInput
            id="max-jobs"
            width={INPUT_WIDTH}
            min={1}
            max={100000}
            placeholder={String(DEFAULTS.maxJobs)}
            {...maxJobs}
          />
        </InlineField>
        <InlineField
          label="Max series"
          labelWidth={LABEL_WIDTH}
          htmlFor="max-series"
          tooltip="Series one Prometheus answer may hold. 1 to 1000000"
        >
          <NumberInput
            id="max-series"
            width={INPUT_WIDTH}
            min={1}
            max={1000000}
            placeholder={String(DEFAULTS.maxSeries)}
            {...maxSeries}
          />
        </InlineField>
        <InlineField
          label="Silent after (min)"
          labelWidth={LABEL_WIDTH}
          htmlFor="silent-after"
          tooltip="A job whose document is not final and whose agents wrote nothing for this long counts as ended at its last update, not running. 1 to 10080"
        >
          <NumberInput
            id="silent-after"
            width={INPUT_WIDTH}
            min={1}
            max={10080}
            placeholder={String(DEFAULTS.silentAfterMinutes)}
            {...silentAfter}
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Access control">
        <InlineField
          label="Identity source"
          labelWidth={LABEL_WIDTH}
          htmlFor="identity-source"
          tooltip="What a restricted viewer's identity is taken from: Grafana's signed ID token (safe), or the login Grafana passes, which a built-in account can change"
        >
          <Select<IdentitySource>
            inputId="identity-source"
            width={INPUT_WIDTH}
            options={toOptions(IDENTITY_SOURCES)}
            value={jsonData.identitySource ?? DEFAULTS.identitySource}
            onChange={(v: SelectableValue<IdentitySource>) => setJson('identitySource', v.value)}
          />
        </InlineField>
        <InlineField
          label="Trusted sign-in methods"
          labelWidth={LABEL_WIDTH}
          htmlFor="trusted-auth-methods"
          tooltip="The ID token's authenticatedBy values whose login and email are mapped (a trailing * matches a prefix)"
        >
          <MultiSelect<string>
            inputId="trusted-auth-methods"
            width={INPUT_WIDTH}
            allowCustomValue
            options={DEFAULTS.trustedAuthMethods.map((m) => ({ label: m, value: m }))}
            value={jsonData.trustedAuthMethods ?? [...DEFAULTS.trustedAuthMethods]}
            onChange={(items: Array<SelectableValue<string>>) =>
              setJson(
                'trustedAuthMethods',
                items.map((i) => i.value).filter((v): v is string => v !== undefined)
              )
            }
          />
        </InlineField>
        <InlineField
          label="User id map"
          labelWidth={LABEL_WIDTH}
          tooltip="Grafana user → Slurm user, by user:<numeric id> (e.g. user:42) or the uid alone (the end of the user's page address under Administration → Users): also for built-in accounts, which cannot change their ids"
        >
          <MapEditor<string>
            id="userIdMap"
            value={jsonData.userIdMap}
            keyPlaceholder="user:<id> or uid"
            valuePlaceholder="Slurm user"
            addLabel="Add user id"
            {...textValue}
            onChange={(v) => setJson('userIdMap', v)}
          />
        </InlineField>
        <InlineField
          label="Grafana URL"
          labelWidth={LABEL_WIDTH}
          htmlFor="grafana-url"
          tooltip="Where the plugin fetches Grafana's signing keys; empty: Grafana's root_url"
        >
          <Input
            id="grafana-url"
            width={INPUT_WIDTH}
            placeholder="http://localhost:3000"
            {...grafanaUrl}
          />
        </InlineField>
        <InlineField
          label="Forward ID token"
          labelWidth={LABEL_WIDTH}
          htmlFor="forward-id-token"
          tooltip="The first Grafana releases with ID forwarding (10.3) forward the ID token only to datasources with this set; later releases always do"
        >
          <InlineSwitch
            id="forward-id-token"
            value={jsonData.forwardGrafanaIdToken ?? false}
            onChange={(e: React.FormEvent<HTMLInputElement>) =>
              setJson('forwardGrafanaIdToken', e.currentTarget.checked || undefined)
            }
          />
        </InlineField>
        <InlineField
          label="User mapping"
          labelWidth={LABEL_WIDTH}
          htmlFor="user-mapping"
          tooltip="How a Grafana user's Slurm user name is found"
        >
          <Select<UserMapping>
            inputId="user-mapping"
            width={INPUT_WIDTH}
            options={toOptions(USER_MAPPINGS)}
            value={jsonData.userMapping ?? DEFAULTS.userMapping}
            onChange={(v: SelectableValue<UserMapping>) => setJson('userMapping', v.value)}
          />
        </InlineField>
        <InlineField
          label="User map"
          labelWidth={LABEL_WIDTH}
          tooltip="Grafana login → Slurm user, for users the mapping above gets wrong (with the ID token: only for accounts from a trusted sign-in method)"
        >
          <MapEditor<string>
            id="userMap"
            value={jsonData.userMap}
            keyPlaceholder="Grafana login"
            valuePlaceholder="Slurm user"
            addLabel="Add user"
            {...textValue}
            onChange={(v) => setJson('userMap', v)}
          />
        </InlineField>
        <InlineField
          label="Account PIs"
          labelWidth={LABEL_WIDTH}
          tooltip="Slurm account → the Slurm users (comma-separated) who see all of its jobs"
        >
          <MapEditor<string[]>
            id="accountPIs"
            value={jsonData.accountPIs}
            keyPlaceholder="Slurm account"
            valuePlaceholder="alice, bob"
            addLabel="Add account"
            {...listValue}
            onChange={(v) => setJson('accountPIs', v)}
          />
        </InlineField>
        <InlineField
          label="Full-access roles"
          labelWidth={LABEL_WIDTH}
          htmlFor="full-access-roles"
          tooltip="Grafana roles that see every job; the others see their own"
        >
          <MultiSelect<GrafanaRole>
            inputId="full-access-roles"
            width={INPUT_WIDTH}
            options={GRAFANA_ROLES.map((r) => ({ label: r, value: r }))}
            value={jsonData.fullAccessRoles ?? [...DEFAULTS.fullAccessRoles]}
            onChange={(items: Array<SelectableValue<GrafanaRole>>) =>
              // An empty list is kept: it means no role sees every job (absent means the default).
              onOptionsChange({
                ...options,
                jsonData: {
                  ...jsonData,
                  fullAccessRoles: items.map((i) => i.value).filter((v): v is GrafanaRole => v !== undefined),
                },
              })
            }
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Allocations">
        <AllocationsEditor value={jsonData.allocations} onChange={(v) => setJson('allocations', v)} />
        <InlineField
          label="Allocations URL"
          labelWidth={LABEL_WIDTH}
          htmlFor="allocations-url"
          tooltip='JSON endpoint serving more allocations: {"allocations": [...]}'
        >
          <Input
            id="allocations-url"
            width={INPUT_WIDTH}
            placeholder="http://collector:9310/constants"
            {...allocationsUrl}
          />
        </InlineField>
        <InlineField
          label="Allocations token"
          labelWidth={LABEL_WIDTH}
          htmlFor="allocations-token"
          tooltip="Bearer token the cluster-state collector requires when it listens beyond loopback (its listen_token_file)"
        >
          <SecretInput id="allocations-token" width={INPUT_WIDTH} {...allocationsToken} />
        </InlineField>
      </FieldSet>

      <FieldSet label="Partition capacity (hogging contention without cluster-state series)">
        <CapacityEditor value={jsonData.partitionCapacity} onChange={(v) => setJson('partitionCapacity', v)} />
      </FieldSet>

      <FieldSet label="Links">
        <InlineField
          label="Job page URL"
          labelWidth={LABEL_WIDTH}
          htmlFor="job-page-url"
          tooltip="Link of a job in the Jobs table: a path (/d/...) or an http(s) URL; ${cluster} and ${job_id} are replaced. Empty: the plugin's own job page"
        >
          <Input
            id="job-page-url"
            width={INPUT_WIDTH}
            placeholder="/d/jobsight-job-detail/job?var-job=${doc_id}"
            {...jobPageUrl}
          />
        </InlineField>
      </FieldSet>
    </>
  );
}
