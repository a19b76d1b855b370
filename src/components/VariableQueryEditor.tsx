import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, Select } from '@grafana/ui';

import { DataSource } from '../datasource';
import { JobsightQuery, toOptions, VARIABLE_KINDS, VariableKind } from '../types';
import { FilterSelect } from './FilterSelect';

/** The query of a template variable: a variable-type query. */
export type JobsightVariableQuery = Pick<JobsightQuery, 'queryType' | 'variable' | 'cluster'> & { refId?: string };

/**
 * Props Grafana passes to a variable query editor (the metricFindQuery kind):
 * the stored query (a string for a variable created before one was chosen)
 * and onChange with the query and its one-line description.
 */
export interface VariableQueryEditorProps {
  query: JobsightVariableQuery | string | undefined;
  datasource: DataSource;
  onChange: (query: JobsightVariableQuery, definition: string) => void;
}

/** Describes a variable query in the variables list. */
export function describeVariableQuery(q: JobsightVariableQuery): string {
  const kind = VARIABLE_KINDS.find((k) => k.value === q.variable)?.label ?? 'Jobsight';
  return q.cluster?.length ? `${kind} of ${q.cluster.join(', ')}` : kind;
}

/** Chooses what a template variable lists (clusters, users, ...), optionally for some clusters. */
export function VariableQueryEditor({ query, datasource, onChange }: VariableQueryEditorProps) {
  const current: JobsightVariableQuery = typeof query === 'object' && query !== null ? query : {};
  const update = (next: JobsightVariableQuery) => {
    const q: JobsightVariableQuery = { ...next, queryType: 'variable' };
    if (!q.cluster?.length) {
      delete q.cluster;
    }
    onChange(q, describeVariableQuery(q));
  };

  return (
    <InlineFieldRow>
      <InlineField label="Values" labelWidth={14} htmlFor="jobsight-variable-kind">
        <Select<VariableKind>
          inputId="jobsight-variable-kind"
          width={24}
          options={toOptions(VARIABLE_KINDS)}
          value={current.variable ?? null}
          placeholder="Choose what to list"
          onChange={(v: SelectableValue<VariableKind>) => update({ ...current, variable: v.value })}
        />
      </InlineField>
      <InlineField
        label="Cluster"
        labelWidth={14}
        htmlFor="jobsight-variable-cluster"
        tooltip="Only values of these clusters; may be a variable ($cluster). Empty: all"
      >
        <FilterSelect
          datasource={datasource}
          kind="clusters"
          inputId="jobsight-variable-cluster"
          width={32}
          values={current.cluster}
          onChange={(cluster) => update({ ...current, cluster })}
        />
      </InlineField>
    </InlineFieldRow>
  );
}
