import React, { ChangeEvent } from 'react';
import {
  DataSourcePluginOptionsEditorProps,
  onUpdateDatasourceJsonDataOption,
  onUpdateDatasourceSecureJsonDataOption,
  updateDatasourcePluginResetOption,
} from '@grafana/data';
import { FieldSet, InlineField, Input, SecretInput } from '@grafana/ui';

import { DEFAULTS, JobsightOptions, JobsightSecureJsonData } from '../types';

/** Props Grafana passes to a datasource configuration page. */
export type ConfigEditorProps = DataSourcePluginOptionsEditorProps<JobsightOptions, JobsightSecureJsonData>;

const LABEL_WIDTH = 24;
const INPUT_WIDTH = 48;

/**
 * The Jobsight datasource settings: where Elasticsearch (job documents) and
 * Prometheus (job series) are, and how to authenticate. Passwords and tokens
 * go to secureJsonData, which Grafana encrypts and never sends back.
 */
export function ConfigEditor(props: ConfigEditorProps) {
  const { options } = props;
  const jsonData = options.jsonData;
  const secureFields = options.secureJsonFields ?? {};

  const onTimeoutChange = (event: ChangeEvent<HTMLInputElement>) => {
    const value = event.target.value.trim();
    const timeoutSeconds = value === '' ? undefined : Number(value);
    props.onOptionsChange({ ...options, jsonData: { ...jsonData, timeoutSeconds } });
  };

  return (
    <>
      <FieldSet label="Elasticsearch (job documents)">
        <InlineField label="URL" labelWidth={LABEL_WIDTH} tooltip="Base URL of the Elasticsearch or OpenSearch HTTP API">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.elasticsearchUrl ?? ''}
            placeholder="http://localhost:9200"
            onChange={onUpdateDatasourceJsonDataOption(props, 'elasticsearchUrl')}
          />
        </InlineField>
        <InlineField label="Job index" labelWidth={LABEL_WIDTH} tooltip="Index with one document per job">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.elasticsearchJobIndex ?? ''}
            placeholder={DEFAULTS.elasticsearchJobIndex}
            onChange={onUpdateDatasourceJsonDataOption(props, 'elasticsearchJobIndex')}
          />
        </InlineField>
        <InlineField label="Node index" labelWidth={LABEL_WIDTH} tooltip="Index with one document per job per node">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.elasticsearchNodeIndex ?? ''}
            placeholder={DEFAULTS.elasticsearchNodeIndex}
            onChange={onUpdateDatasourceJsonDataOption(props, 'elasticsearchNodeIndex')}
          />
        </InlineField>
        <InlineField label="User" labelWidth={LABEL_WIDTH} tooltip="Basic authentication user; empty for none">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.elasticsearchUser ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'elasticsearchUser')}
          />
        </InlineField>
        <InlineField label="Password" labelWidth={LABEL_WIDTH}>
          <SecretInput
            width={INPUT_WIDTH}
            isConfigured={Boolean(secureFields.elasticsearchPassword)}
            value={options.secureJsonData?.elasticsearchPassword ?? ''}
            onChange={onUpdateDatasourceSecureJsonDataOption(props, 'elasticsearchPassword')}
            onReset={() => updateDatasourcePluginResetOption(props, 'elasticsearchPassword')}
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Prometheus (job series)">
        <InlineField
          label="URL"
          labelWidth={LABEL_WIDTH}
          tooltip="Base URL of the Prometheus query API (for Mimir include its /prometheus prefix)"
        >
          <Input
            width={INPUT_WIDTH}
            value={jsonData.prometheusUrl ?? ''}
            placeholder="http://localhost:9090"
            onChange={onUpdateDatasourceJsonDataOption(props, 'prometheusUrl')}
          />
        </InlineField>
        <InlineField label="Bearer token" labelWidth={LABEL_WIDTH} tooltip="Either a bearer token or user and password">
          <SecretInput
            width={INPUT_WIDTH}
            isConfigured={Boolean(secureFields.prometheusBearerToken)}
            value={options.secureJsonData?.prometheusBearerToken ?? ''}
            onChange={onUpdateDatasourceSecureJsonDataOption(props, 'prometheusBearerToken')}
            onReset={() => updateDatasourcePluginResetOption(props, 'prometheusBearerToken')}
          />
        </InlineField>
        <InlineField label="User" labelWidth={LABEL_WIDTH} tooltip="Basic authentication user; empty for none">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.prometheusUser ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'prometheusUser')}
          />
        </InlineField>
        <InlineField label="Password" labelWidth={LABEL_WIDTH}>
          <SecretInput
            width={INPUT_WIDTH}
            isConfigured={Boolean(secureFields.prometheusPassword)}
            value={options.secureJsonData?.prometheusPassword ?? ''}
            onChange={onUpdateDatasourceSecureJsonDataOption(props, 'prometheusPassword')}
            onReset={() => updateDatasourcePluginResetOption(props, 'prometheusPassword')}
          />
        </InlineField>
      </FieldSet>

      <FieldSet label="Scope and limits">
        <InlineField label="Cluster filter" labelWidth={LABEL_WIDTH} tooltip="Only show jobs of this Slurm cluster; empty for all">
          <Input
            width={INPUT_WIDTH}
            value={jsonData.clusterFilter ?? ''}
            onChange={onUpdateDatasourceJsonDataOption(props, 'clusterFilter')}
          />
        </InlineField>
        <InlineField label="Timeout (s)" labelWidth={LABEL_WIDTH} tooltip="Per request to Elasticsearch or Prometheus, 1 to 300">
          <Input
            width={INPUT_WIDTH}
            type="number"
            min={1}
            max={300}
            value={jsonData.timeoutSeconds ?? ''}
            placeholder={String(DEFAULTS.timeoutSeconds)}
            onChange={onTimeoutChange}
          />
        </InlineField>
      </FieldSet>
    </>
  );
}
