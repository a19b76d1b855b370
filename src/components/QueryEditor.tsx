import React, { ChangeEvent } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, Input, Select } from '@grafana/ui';

import { DataSource } from '../datasource';
import { JobsightOptions, JobsightQuery, QUERY_TYPES, QueryType } from '../types';

/** Props Grafana passes to a query editor. */
export type JobsightQueryEditorProps = QueryEditorProps<DataSource, JobsightQuery, JobsightOptions>;

/** A minimal editor: the query type and optional cluster and job id filters. */
export function QueryEditor({ query, onChange, onRunQuery }: JobsightQueryEditorProps) {
  const onQueryTypeChange = (v: SelectableValue<QueryType>) => {
    onChange({ ...query, queryType: v.value });
    onRunQuery();
  };
  const onText = (key: 'cluster' | 'jobId') => (e: ChangeEvent<HTMLInputElement>) => {
    onChange({ ...query, [key]: e.target.value });
  };

  return (
    <InlineFieldRow>
      <InlineField label="Query type" labelWidth={14}>
        <Select<QueryType> width={24} options={QUERY_TYPES} value={query.queryType} onChange={onQueryTypeChange} />
      </InlineField>
      <InlineField label="Cluster" tooltip="Empty: the datasource's cluster filter, or all clusters">
        <Input width={20} value={query.cluster ?? ''} onChange={onText('cluster')} onBlur={onRunQuery} />
      </InlineField>
      <InlineField label="Job id" tooltip='As Slurm prints it: "1234", "1234_7", "1234+1"'>
        <Input width={20} value={query.jobId ?? ''} onChange={onText('jobId')} onBlur={onRunQuery} />
      </InlineField>
    </InlineFieldRow>
  );
}
