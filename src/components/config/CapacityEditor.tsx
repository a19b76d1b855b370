import React, { useState } from 'react';
import { Button, IconButton, Input } from '@grafana/ui';

import { Capacity } from '../../types';
import { NumberInput } from '../NumberInput';

/** Props of the partition capacity editor. */
export interface CapacityEditorProps {
  value?: Record<string, Capacity>;
  onChange: (value: Record<string, Capacity> | undefined) => void;
}

interface Row {
  key: string;
  cpus?: number;
  gpus?: number;
}

/**
 * Edits the partitions' sizes ("cluster/partition" or "partition" → CPUs and
 * GPUs), which the Hogging query uses for contention when no cluster-state
 * series exist. Rows without a key are kept while typed and left out of the
 * setting.
 */
export function CapacityEditor({ value, onChange }: CapacityEditorProps) {
  const [rows, setRows] = useState<Row[]>(() => Object.entries(value ?? {}).map(([key, c]) => ({ key, ...c })));

  const update = (next: Row[]) => {
    setRows(next);
    const map: Record<string, Capacity> = {};
    for (const { key, cpus, gpus } of next) {
      if (key.trim() === '') {
        continue;
      }
      const c: Capacity = {};
      if (cpus !== undefined) {
        c.cpus = cpus;
      }
      if (gpus !== undefined) {
        c.gpus = gpus;
      }
      map[key.trim()] = c;
    }
    onChange(Object.keys(map).length > 0 ? map : undefined);
  };
  const edit = (i: number, change: Partial<Row>) => update(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  return (
    <div>
      {rows.map((row, i) => (
        <div key={i} style={{ display: 'flex', gap: 8, marginBottom: 4 }}>
          <Input
            aria-label={`Partition ${i + 1}`}
            width={24}
            value={row.key}
            placeholder="cluster/partition"
            onChange={(e) => edit(i, { key: e.currentTarget.value })}
          />
          <NumberInput
            id={`partition-${i + 1}-cpus`}
            aria-label={`Partition ${i + 1} CPUs`}
            width={12}
            min={0}
            placeholder="CPUs"
            value={row.cpus}
            onCommit={(v) => edit(i, { cpus: v })}
          />
          <NumberInput
            id={`partition-${i + 1}-gpus`}
            aria-label={`Partition ${i + 1} GPUs`}
            width={12}
            min={0}
            placeholder="GPUs"
            value={row.gpus}
            onCommit={(v) => edit(i, { gpus: v })}
          />
          <IconButton
            name="trash-alt"
            aria-label={`Remove partition ${i + 1}`}
            onClick={() => update(rows.filter((_, j) => j !== i))}
          />
        </div>
      ))}
      <Button variant="secondary" size="sm" icon="plus" onClick={() => setRows([...rows, { key: '' }])}>
        Add partition
      </Button>
    </div>
  );
}
