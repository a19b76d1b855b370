import React, { useState } from 'react';
import { Button, IconButton, Input } from '@grafana/ui';

/** Props of a key → value editor. */
export interface MapEditorProps<V> {
  /** Names the rows' inputs for labels and tests, e.g. "userMap". */
  id: string;
  value?: Record<string, V>;
  keyPlaceholder: string;
  valuePlaceholder: string;
  addLabel: string;
  /** Shows a value as text, and reads it back (undefined: leave the row out). */
  format: (v: V) => string;
  parse: (text: string) => V | undefined;
  /** Called with the map of the complete rows; undefined when there are none. */
  onChange: (value: Record<string, V> | undefined) => void;
}

interface Row {
  key: string;
  text: string;
}

/**
 * Edits a map as rows of key and value. It keeps the rows as typed (an empty
 * key, a key typed twice) and reports the map of the complete ones: rows with
 * an empty key or value are left out, and of two rows with one key the last
 * one counts.
 */
export function MapEditor<V>({
  id,
  value,
  keyPlaceholder,
  valuePlaceholder,
  addLabel,
  format,
  parse,
  onChange,
}: MapEditorProps<V>) {
  const [rows, setRows] = useState<Row[]>(() =>
    Object.entries(value ?? {}).map(([key, v]) => ({ key, text: format(v) }))
  );

  const update = (next: Row[]) => {
    setRows(next);
    const map: Record<string, V> = {};
    for (const row of next) {
      const key = row.key.trim();
      const v = parse(row.text);
      if (key !== '' && v !== undefined) {
        map[key] = v;
      }
    }
    onChange(Object.keys(map).length > 0 ? map : undefined);
  };
  const edit = (i: number, change: Partial<Row>) => update(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  return (
    <div>
      {rows.map((row, i) => (
        <div key={i} style={{ display: 'flex', gap: 8, marginBottom: 4 }}>
          <Input
            aria-label={`${id} key ${i + 1}`}
            width={24}
            value={row.key}
            placeholder={keyPlaceholder}
            onChange={(e) => edit(i, { key: e.currentTarget.value })}
          />
          <Input
            aria-label={`${id} value ${i + 1}`}
            width={32}
            value={row.text}
            placeholder={valuePlaceholder}
            onChange={(e) => edit(i, { text: e.currentTarget.value })}
          />
          <IconButton
            name="trash-alt"
            aria-label={`Remove ${id} row ${i + 1}`}
            onClick={() => update(rows.filter((_, j) => j !== i))}
          />
        </div>
      ))}
      <Button variant="secondary" size="sm" icon="plus" onClick={() => setRows([...rows, { key: '', text: '' }])}>
        {addLabel}
      </Button>
    </div>
  );
}

/** Text values: the trimmed text, or nothing when empty. */
export const textValue = {
  format: (v: string) => v,
  parse: (t: string) => (t.trim() === '' ? undefined : t.trim()),
};

/** Lists of names written comma-separated: "alice, bob". */
export const listValue = {
  format: (v: string[]) => v.join(', '),
  parse: (t: string) => {
    const names = t
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    return names.length > 0 ? names : undefined;
  },
};
