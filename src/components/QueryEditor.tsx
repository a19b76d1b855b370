import React, { ChangeEvent } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';
import { InlineField, InlineFieldRow, InlineSwitch, Input, MultiSelect, Select } from '@grafana/ui';

import { DataSource } from '../datasource';
import {
  CLUSTER_SERIES,
  ClusterSeriesName,
  FILTER_OPTION_KINDS,
  FILTERS,
  FilterKey,
  GROUP_BY,
  GroupBy,
  JOB_SORT_KEYS,
  JobSortKey,
  JobsightOptions,
  JobsightQuery,
  QUERY_LIMITS,
  QUERY_TYPES,
  QueryType,
  RESOURCES,
  Resource,
  toOptions,
  VARIABLE_KINDS,
  VariableKind,
} from '../types';
import { FilterSelect } from './FilterSelect';
import { IdentityLine } from './IdentityLine';
import { NumberInput } from './NumberInput';

/** Props Grafana passes to a query editor. */
export type JobsightQueryEditorProps = QueryEditorProps<DataSource, JobsightQuery, JobsightOptions>;

/** Which fields a query type uses (pkg/models/query.go documents each). */
interface TypeFields {
  filters: FilterKey[];
  name?: boolean;
  /** jobId as a filter, or required (job timeline). */
  jobId?: 'filter' | 'required';
  paging?: boolean;
  perNode?: boolean;
  groupBy?: GroupBy[];
  /** Hogging checks several resources; the others use the first. */
  resources?: { multi: boolean; choices: Resource[] };
  hogging?: boolean;
  variable?: boolean;
  /** Cluster series: the series, and nodes for the agent series. */
  series?: boolean;
}

const ALL_FILTERS: FilterKey[] = ['cluster', 'user', 'account', 'partition', 'state', 'class'];
const GROUPS: GroupBy[] = ['', 'user', 'account', 'partition', 'cluster'];

/** The fields of each query type. */
export const TYPE_FIELDS: Record<QueryType, TypeFields> = {
  jobs: { filters: ALL_FILTERS, name: true, jobId: 'filter', paging: true },
  jobTimeline: { filters: ['cluster'], jobId: 'required', perNode: true },
  reservation: { filters: ALL_FILTERS, name: true, groupBy: [...GROUPS, 'class'] },
  allocation: { filters: ['cluster', 'account'], resources: { multi: false, choices: ['cpu', 'gpu'] } },
  hogging: {
    filters: ['cluster', 'user', 'account', 'partition'],
    resources: { multi: true, choices: ['cpu', 'gpu', 'memory'] },
    hogging: true,
  },
  usageHistory: {
    filters: ALL_FILTERS,
    name: true,
    groupBy: [...GROUPS, 'hourOfWeek'],
    resources: { multi: false, choices: ['cpu', 'gpu', 'memory'] },
  },
  variable: { filters: ['cluster'], variable: true },
  clusterSeries: { filters: ['cluster', 'partition'], series: true },
  typicalRequest: { filters: ['cluster', 'user', 'account', 'partition'], name: true },
};

const LABEL_WIDTH = 14;
const WIDTH = 28;

/** The model keys each part of TypeFields stands for. */
function usedKeys(f: TypeFields): Set<keyof JobsightQuery> {
  const keys = new Set<keyof JobsightQuery>(['queryType', ...f.filters]);
  const add = (on: unknown, ...k: Array<keyof JobsightQuery>) => {
    if (on) {
      k.forEach((x) => keys.add(x));
    }
  };
  add(f.name, 'name');
  add(f.jobId, 'jobId');
  add(f.paging, 'sortBy', 'sortDesc', 'limit', 'offset');
  add(f.perNode, 'perNode');
  add(f.groupBy, 'groupBy');
  add(f.resources, 'resources');
  add(f.hogging, 'windowSeconds', 'idleThreshold', 'minContention');
  add(f.variable, 'variable');
  add(f.series, 'series', 'node');
  return keys;
}

// Every key of the query model (pkg/models.Query) but queryType; a Record so
// that a key added to JobsightQuery and forgotten here fails the typecheck.
const MODEL_KEYS: Record<Exclude<keyof JobsightQuery, keyof DataQuery>, true> = {
  cluster: true,
  user: true,
  account: true,
  partition: true,
  state: true,
  class: true,
  name: true,
  jobId: true,
  sortBy: true,
  sortDesc: true,
  limit: true,
  offset: true,
  perNode: true,
  groupBy: true,
  resources: true,
  windowSeconds: true,
  idleThreshold: true,
  minContention: true,
  variable: true,
  series: true,
  node: true,
  timezone: true,
};

/**
 * The query with another type: the model keys the new type does not use are
 * dropped (a usage-history "hourOfWeek" grouping would be an error in a
 * reservation query); the filters it shares are kept.
 */
export function changeType(query: JobsightQuery, type: QueryType): JobsightQuery {
  const keep = usedKeys(TYPE_FIELDS[type]);
  const next: JobsightQuery = { ...query, queryType: type };
  for (const key of Object.keys(MODEL_KEYS) as Array<keyof typeof MODEL_KEYS>) {
    if (!keep.has(key)) {
      delete next[key];
    }
  }
  if (next.groupBy && !TYPE_FIELDS[type].groupBy?.includes(next.groupBy)) {
    delete next.groupBy;
  }
  if (next.resources && TYPE_FIELDS[type].resources) {
    const choices = TYPE_FIELDS[type].resources?.choices ?? [];
    next.resources = next.resources.filter((r) => choices.includes(r));
    if (next.resources.length === 0) {
      delete next.resources;
    }
  }
  return next;
}

/** Removes a key whose value is empty, so the query JSON carries only what is set. */
function withField<K extends keyof JobsightQuery>(
  query: JobsightQuery,
  key: K,
  value: JobsightQuery[K]
): JobsightQuery {
  const next = { ...query };
  if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) {
    delete next[key];
  } else {
    next[key] = value;
  }
  return next;
}

/**
 * The query editor: a query type, then the fields that type uses. Filters are
 * multi-value lists whose options come from the backend and which take typed
 * values and template variables.
 */
export function QueryEditor({ query, datasource, onChange, onRunQuery }: JobsightQueryEditorProps) {
  const type = query.queryType;
  const fields = type ? TYPE_FIELDS[type] : undefined;

  const set = <K extends keyof JobsightQuery>(key: K, value: JobsightQuery[K], run = true) => {
    onChange(withField(query, key, value));
    if (run) {
      onRunQuery();
    }
  };
  const onText = (key: 'name' | 'jobId') => (e: ChangeEvent<HTMLInputElement>) => {
    onChange(withField(query, key, e.currentTarget.value));
  };
  // The options of the other filters are narrowed to the query's cluster when it names one.
  const oneCluster = query.cluster?.length === 1 ? query.cluster[0] : undefined;

  return (
    <>
      <IdentityLine datasource={datasource} />
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={LABEL_WIDTH} htmlFor="jobsight-queryType">
          <Select<QueryType>
            inputId="jobsight-queryType"
            width={WIDTH}
            options={QUERY_TYPES}
            value={type ?? null}
            placeholder="Choose a query type"
            onChange={(v: SelectableValue<QueryType>) => {
              if (v.value) {
                onChange(changeType(query, v.value));
                onRunQuery();
              }
            }}
          />
        </InlineField>
        {type && (
          <span className="gf-form-label" style={{ flexGrow: 1 }}>
            {QUERY_TYPES.find((t) => t.value === type)?.description}
          </span>
        )}
      </InlineFieldRow>

      {fields?.variable && (
        <InlineFieldRow>
          <InlineField label="Values" labelWidth={LABEL_WIDTH} htmlFor="jobsight-variable">
            <Select<VariableKind>
              inputId="jobsight-variable"
              width={WIDTH}
              options={toOptions(VARIABLE_KINDS)}
              value={query.variable ?? null}
              onChange={(v: SelectableValue<VariableKind>) => set('variable', v.value)}
            />
          </InlineField>
        </InlineFieldRow>
      )}

      {fields?.series && (
        <InlineFieldRow>
          <InlineField
            label="Series"
            labelWidth={LABEL_WIDTH}
            htmlFor="jobsight-series"
            tooltip="agent_* and clusterstate_*: full-access roles only; partition_*: every viewer"
          >
            <Select<ClusterSeriesName>
              inputId="jobsight-series"
              width={WIDTH}
              options={CLUSTER_SERIES.map((s) => ({ label: s, value: s }))}
              value={query.series ?? null}
              onChange={(v: SelectableValue<ClusterSeriesName>) => set('series', v.value)}
            />
          </InlineField>
        </InlineFieldRow>
      )}

      {fields && fields.filters.length > 0 && (
        <InlineFieldRow>
          {FILTERS.filter((f) => fields.filters.includes(f.key)).map((f) => (
            <InlineField
              key={f.key}
              label={f.label}
              labelWidth={LABEL_WIDTH}
              tooltip={f.tooltip}
              htmlFor={`jobsight-${f.key}`}
            >
              <FilterSelect
                datasource={datasource}
                kind={FILTER_OPTION_KINDS[f.key]}
                inputId={`jobsight-${f.key}`}
                width={WIDTH}
                values={query[f.key]}
                cluster={f.key === 'cluster' ? undefined : oneCluster}
                onChange={(values) => set(f.key, values)}
              />
            </InlineField>
          ))}
        </InlineFieldRow>
      )}

      {fields && (fields.name || fields.jobId) && (
        <InlineFieldRow>
          {fields.jobId && (
            <InlineField
              label="Job id"
              labelWidth={LABEL_WIDTH}
              htmlFor="jobsight-jobId"
              required={fields.jobId === 'required'}
              invalid={fields.jobId === 'required' && !query.jobId}
              tooltip='"cluster:1234", or a Slurm id ("1234", "1234_7", "1234+1") with one cluster above; may be a variable'
            >
              <Input
                id="jobsight-jobId"
                width={WIDTH}
                value={query.jobId ?? ''}
                placeholder="mycluster:1234"
                onChange={onText('jobId')}
                onBlur={onRunQuery}
              />
            </InlineField>
          )}
          {fields.name && (
            <InlineField
              label="Name"
              labelWidth={LABEL_WIDTH}
              htmlFor="jobsight-name"
              tooltip="Jobs whose name contains this (case-sensitive)"
            >
              <Input
                id="jobsight-name"
                width={WIDTH}
                value={query.name ?? ''}
                onChange={onText('name')}
                onBlur={onRunQuery}
              />
            </InlineField>
          )}
        </InlineFieldRow>
      )}

      {fields?.paging && (
        <InlineFieldRow>
          <InlineField label="Sort by" labelWidth={LABEL_WIDTH} htmlFor="jobsight-sortBy">
            <Select<JobSortKey>
              inputId="jobsight-sortBy"
              width={WIDTH}
              isClearable
              placeholder="start_time"
              options={JOB_SORT_KEYS.map((k) => ({ label: k, value: k }))}
              value={query.sortBy ?? null}
              onChange={(v: SelectableValue<JobSortKey> | null) => set('sortBy', v?.value)}
            />
          </InlineField>
          <InlineField label="Descending" htmlFor="jobsight-sortDesc">
            <InlineSwitch
              id="jobsight-sortDesc"
              value={query.sortDesc ?? false}
              onChange={(e) => set('sortDesc', e.currentTarget.checked || undefined)}
            />
          </InlineField>
          <InlineField label="Limit" htmlFor="jobsight-limit" tooltip={`Rows per page, 1 to ${QUERY_LIMITS.maxLimit}`}>
            <NumberInput
              id="jobsight-limit"
              width={12}
              min={1}
              max={QUERY_LIMITS.maxLimit}
              placeholder={String(QUERY_LIMITS.defaultLimit)}
              value={query.limit}
              onCommit={(v) => set('limit', v)}
            />
          </InlineField>
          <InlineField label="Offset" htmlFor="jobsight-offset" tooltip="Rows to skip (paging)">
            <NumberInput
              id="jobsight-offset"
              width={12}
              min={0}
              max={QUERY_LIMITS.maxLimit}
              placeholder="0"
              value={query.offset}
              onCommit={(v) => set('offset', v)}
            />
          </InlineField>
        </InlineFieldRow>
      )}

      {fields?.perNode && (
        <InlineFieldRow>
          <InlineField
            label="Per node"
            labelWidth={LABEL_WIDTH}
            htmlFor="jobsight-perNode"
            tooltip="One series per node instead of the sum"
          >
            <InlineSwitch
              id="jobsight-perNode"
              value={query.perNode ?? false}
              onChange={(e) => set('perNode', e.currentTarget.checked || undefined)}
            />
          </InlineField>
        </InlineFieldRow>
      )}

      {fields && (fields.groupBy || fields.resources) && (
        <InlineFieldRow>
          {fields.groupBy && (
            <InlineField label="Group by" labelWidth={LABEL_WIDTH} htmlFor="jobsight-groupBy">
              <Select<GroupBy>
                inputId="jobsight-groupBy"
                width={WIDTH}
                options={toOptions(GROUP_BY.filter((g) => fields.groupBy?.includes(g.value)))}
                value={query.groupBy ?? ''}
                onChange={(v: SelectableValue<GroupBy>) => set('groupBy', v.value)}
              />
            </InlineField>
          )}
          {fields.resources && (
            <InlineField
              label={fields.resources.multi ? 'Resources' : 'Resource'}
              labelWidth={LABEL_WIDTH}
              htmlFor="jobsight-resources"
              tooltip={fields.resources.multi ? 'Which resources to check; empty: all' : 'Default: CPU'}
            >
              {fields.resources.multi ? (
                <MultiSelect<Resource>
                  inputId="jobsight-resources"
                  width={WIDTH}
                  placeholder="All"
                  options={toOptions(RESOURCES)}
                  value={query.resources ?? []}
                  onChange={(items: Array<SelectableValue<Resource>>) =>
                    set(
                      'resources',
                      items.map((i) => i.value).filter((v): v is Resource => v !== undefined)
                    )
                  }
                />
              ) : (
                <Select<Resource>
                  inputId="jobsight-resources"
                  width={WIDTH}
                  placeholder="CPU"
                  options={toOptions(RESOURCES.filter((r) => fields.resources?.choices.includes(r.value)))}
                  value={query.resources?.[0] ?? null}
                  onChange={(v: SelectableValue<Resource>) => set('resources', v.value ? [v.value] : undefined)}
                />
              )}
            </InlineField>
          )}
        </InlineFieldRow>
      )}

      {fields?.hogging && (
        <InlineFieldRow>
          <InlineField
            label="Window (s)"
            labelWidth={LABEL_WIDTH}
            htmlFor="jobsight-windowSeconds"
            tooltip="How long a resource must have been unused, 60 to 604800 seconds"
          >
            <NumberInput
              id="jobsight-windowSeconds"
              width={12}
              min={60}
              max={604800}
              placeholder={String(QUERY_LIMITS.defaultWindowSeconds)}
              value={query.windowSeconds}
              onCommit={(v) => set('windowSeconds', v)}
            />
          </InlineField>
          <InlineField
            label="Idle below"
            htmlFor="jobsight-idleThreshold"
            tooltip="Utilisation (0 to 1) below which a resource counts as unused"
          >
            <NumberInput
              id="jobsight-idleThreshold"
              width={12}
              min={0}
              max={1}
              step={0.01}
              placeholder={String(QUERY_LIMITS.defaultIdleThreshold)}
              value={query.idleThreshold}
              onCommit={(v) => set('idleThreshold', v)}
            />
          </InlineField>
          <InlineField
            label="Min contention"
            htmlFor="jobsight-minContention"
            tooltip="Drop jobs whose partition's contention weight (0 to 1) is below this; 0 reports all, weighted"
          >
            <NumberInput
              id="jobsight-minContention"
              width={12}
              min={0}
              max={1}
              step={0.05}
              placeholder="0"
              value={query.minContention}
              onCommit={(v) => set('minContention', v)}
            />
          </InlineField>
        </InlineFieldRow>
      )}
    </>
  );
}
