import React from 'react';
import { SelectableValue } from '@grafana/data';
import { Button, IconButton, Input, Select } from '@grafana/ui';

import { Allocation, DEFAULTS } from '../../types';
import { NumberInput } from '../NumberInput';

/** Props of the allocations editor. */
export interface AllocationsEditorProps {
  value?: Allocation[];
  onChange: (value: Allocation[] | undefined) => void;
}

const RESOURCE_OPTIONS: Array<SelectableValue<Allocation['resource']>> = [
  { label: 'CPU', value: 'cpu' },
  { label: 'GPU', value: 'gpu' },
];

const HEADERS = ['Cluster', 'Account', 'Resource', 'Hours', 'Period (days)', 'Start'];

/**
 * Edits the allocation thresholds: one row per allocation of resource-hours
 * per period, for a cluster or one of its accounts. The backend checks each
 * row and names the one at fault (allocations[i]).
 */
export function AllocationsEditor({ value, onChange }: AllocationsEditorProps) {
  const rows = value ?? [];
  const update = (next: Allocation[]) => onChange(next.length > 0 ? next : undefined);
  const edit = (i: number, change: Partial<Allocation>) => {
    update(
      rows.map((r, j) => {
        if (j !== i) {
          return r;
        }
        const row: Allocation = { ...r, ...change };
        // Optional keys are left out rather than stored empty.
        for (const k of ['account', 'periodDays', 'start'] as const) {
          if (row[k] === undefined || row[k] === '') {
            delete row[k];
          }
        }
        return row;
      })
    );
  };

  return (
    <div>
      {rows.length > 0 && (
        <div style={{ display: 'flex', gap: 8, marginBottom: 4 }}>
          {HEADERS.map((h, i) => (
            <span key={h} style={{ width: i === 2 ? 96 : 128 }}>
              {h}
            </span>
          ))}
        </div>
      )}
      {rows.map((row, i) => (
        <div key={i} style={{ display: 'flex', gap: 8, marginBottom: 4 }}>
          <Input
            aria-label={`Allocation ${i + 1} cluster`}
            width={16}
            value={row.cluster}
            placeholder="cluster"
            onChange={(e) => edit(i, { cluster: e.currentTarget.value })}
          />
          <Input
            aria-label={`Allocation ${i + 1} account`}
            width={16}
            value={row.account ?? ''}
            placeholder="all accounts"
            onChange={(e) => edit(i, { account: e.currentTarget.value })}
          />
          <Select<Allocation['resource']>
            aria-label={`Allocation ${i + 1} resource`}
            width={12}
            options={RESOURCE_OPTIONS}
            value={row.resource}
            onChange={(v) => v.value && edit(i, { resource: v.value })}
          />
          <NumberInput
            id={`allocation-${i + 1}-hours`}
            aria-label={`Allocation ${i + 1} hours`}
            width={16}
            min={0}
            placeholder="8766"
            value={row.hours}
            onCommit={(v) => edit(i, { hours: v ?? 0 })}
          />
          <NumberInput
            id={`allocation-${i + 1}-periodDays`}
            aria-label={`Allocation ${i + 1} period days`}
            width={16}
            min={1}
            max={3660}
            placeholder={String(DEFAULTS.periodDays)}
            value={row.periodDays}
            onCommit={(v) => edit(i, { periodDays: v })}
          />
          <Input
            aria-label={`Allocation ${i + 1} start`}
            width={16}
            value={row.start ?? ''}
            placeholder="1 January"
            onChange={(e) => edit(i, { start: e.currentTarget.value })}
          />
          <IconButton
            name="trash-alt"
            aria-label={`Remove allocation ${i + 1}`}
            onClick={() => update(rows.filter((_, j) => j !== i))}
          />
        </div>
      ))}
      <Button
        variant="secondary"
        size="sm"
        icon="plus"
        onClick={() => update([...rows, { cluster: '', resource: 'gpu', hours: 0 }])}
      >
        Add allocation
      </Button>
    </div>
  );
}
