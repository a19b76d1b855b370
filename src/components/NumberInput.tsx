import React, { useState } from 'react';
import { Input } from '@grafana/ui';

/** Props of a number field. */
export interface NumberInputProps {
  id: string;
  /** Names the field where no label points at it (rows of a list). */
  'aria-label'?: string;
  value?: number;
  placeholder?: string;
  min?: number;
  max?: number;
  step?: number;
  width?: number;
  /** Called on blur with the number typed, or undefined when the field is empty. */
  onCommit: (value: number | undefined) => void;
}

/**
 * A number field that keeps what is being typed ("0.") and commits on blur,
 * so that a query runs once per edit rather than once per key. A value that
 * is not a number is not committed; the field shows it until it is fixed.
 */
export function NumberInput({ id, value, placeholder, min, max, step, width, onCommit, ...rest }: NumberInputProps) {
  const [text, setText] = useState(value === undefined ? '' : String(value));
  // A new value from outside replaces what is shown, during this render
  // (React's pattern for state derived from a prop; an effect would render twice).
  const [shown, setShown] = useState(value);
  if (value !== shown) {
    setShown(value);
    setText(value === undefined ? '' : String(value));
  }

  const commit = () => {
    const t = text.trim();
    if (t === '') {
      if (value !== undefined) {
        onCommit(undefined);
      }
      return;
    }
    const n = Number(t);
    if (Number.isFinite(n) && n !== value) {
      onCommit(n);
    }
  };

  return (
    <Input
      id={id}
      aria-label={rest['aria-label']}
      type="number"
      width={width}
      min={min}
      max={max}
      step={step}
      placeholder={placeholder}
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      onBlur={commit}
    />
  );
}
